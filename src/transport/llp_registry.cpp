#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "transport/ib/rc_channel.hpp"
#include "transport/llp_registry.hpp"
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

namespace llp {

namespace {
std::mutex &table_mu() {
    static std::mutex mu;
    return mu;
}
std::map<ri_llp_stream_handle_t, std::unique_ptr<UnclaimedStream>> &table() {
    static std::map<ri_llp_stream_handle_t, std::unique_ptr<UnclaimedStream>> t;
    return t;
}
}  // namespace

bool publish(ri_llp_stream_handle_t h, std::unique_ptr<UnclaimedStream> s) {
    std::unique_lock lk(table_mu());
    auto [it, fresh] = table().try_emplace(h, nullptr);
    if (!fresh) {
        lk.unlock();
        return false;  // `s` releases what it holds, outside the lock
    }
    it->second = std::move(s);
    return true;
}

std::unique_ptr<UnclaimedStream> take(ri_llp_stream_handle_t h,
                                      bool (*pred)(const UnclaimedStream &)) {
    std::lock_guard lk(table_mu());
    auto it = table().find(h);
    if (it == table().end() || (pred && !pred(*it->second))) return nullptr;
    std::unique_ptr<UnclaimedStream> s = std::move(it->second);
    table().erase(it);
    return s;
}

bool send_deferred(ri_llp_stream_handle_t h, uint64_t key) {
    std::lock_guard lk(table_mu());
    auto it = table().find(h);
    return it != table().end() && it->second->send_deferred(h, key);
}

bool release(ri_llp_stream_handle_t h) {
    return take(h) != nullptr;  // destroyed here, outside the table's lock
}

bool is_unclaimed(ri_llp_stream_handle_t h) {
    std::lock_guard lk(table_mu());
    return table().count(h) != 0;
}

}  // namespace llp

std::unique_ptr<Channel> claim_llp(ri_llp_stream_handle_t h, bool &known,
                                   ProgressEngine &progress) {
    if (std::unique_ptr<llp::UnclaimedStream> s = llp::take(h)) {
        known = true;
        return s->claim(h, progress);
    }
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

std::unique_ptr<Channel> claim(const QpBinding &binding, bool &known, ProgressEngine &progress) {
    if (const auto *s = std::get_if<StreamBinding>(&binding))
        return claim_llp(s->llp, known, progress);
    known = true;
    return ib::claim_path(std::get<IbPathBinding>(binding), progress);
}

}  // namespace softrnic::transport
