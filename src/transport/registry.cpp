#include <atomic>
#include <mutex>
#include <vector>

#include "transport/transport.hpp"

namespace softrnic::transport {

namespace {
std::mutex &claimers_mu() {
    static std::mutex mu;
    return mu;
}
std::vector<LlpClaimer> &claimers() {
    static std::vector<LlpClaimer> v;
    return v;
}
}  // namespace

namespace {
std::atomic<PlacementRevoker> g_revoker{nullptr};
}  // namespace

void register_placement_revoker(PlacementRevoker revoker) {
    g_revoker.store(revoker, std::memory_order_release);
}

void revoke_remote_placement() {
    if (PlacementRevoker r = g_revoker.load(std::memory_order_acquire)) r();
}

void register_llp_claimer(LlpClaimer claimer) {
    std::lock_guard lk(claimers_mu());
    for (LlpClaimer c : claimers())
        if (c == claimer) return;
    claimers().push_back(claimer);
}

std::unique_ptr<Channel> claim_llp(ri_llp_stream_handle_t h, bool &known,
                                   ProgressEngine &progress) {
    std::vector<LlpClaimer> list;
    {
        std::lock_guard lk(claimers_mu());
        list = claimers();
    }
    known = false;
    for (LlpClaimer c : list) {
        bool mine = false;
        std::unique_ptr<Channel> ch = c(h, mine, progress);
        if (mine) {
            known = true;
            return ch;
        }
    }
    return nullptr;
}

}  // namespace softrnic::transport
