// registry.hpp - the DAT registry of one process (what libdat2 is).
//
// Three tables:
//  - the static registry: dat.conf entries the registry may load on demand
//    (uDAPL "default" lines only), read once, lazily, from $DAT_OVERRIDE or
//    /etc/dat.conf;
//  - the dynamic registry: DAT_PROVIDER tables providers registered with
//    dat_registry_add_provider, keyed by (IA name, version, thread safety);
//  - the open IAs: consumers get small integers (1, 2, ...) instead of the
//    provider's IA handle, as the reference registry does, so IA handles can
//    be checked and a closed one is recognised.
//
// Locks: load_mutex_ serialises loading/unloading provider libraries and the
// dat_provider_init/fini calls (which re-enter through add/remove_provider, so
// it is recursive); dynamic_mutex_ guards the dynamic registry; ia_mutex_ the
// open-IA table. Only load_mutex_ -> dynamic_mutex_ is ever nested, and no
// lock is held while a provider's ia_open/ia_close/query runs.
#pragma once

#include <dat2/dat_registry.h>
#include <dat2/udat.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace softrnic::dat {

inline DAT_RETURN dat_error(DAT_RETURN_TYPE type, DAT_RETURN_SUBTYPE subtype = DAT_NO_SUBTYPE) {
    return DAT_CLASS_ERROR | static_cast<DAT_RETURN>(type) | static_cast<DAT_RETURN>(subtype);
}

// (IA name, API version, thread safety): what consumers open and providers register.
struct ProviderKey {
    std::string ia_name;
    DAT_UINT32 major = 0;
    DAT_UINT32 minor = 0;
    bool thread_safe = false;

    static ProviderKey from(const DAT_PROVIDER_INFO &info);
    DAT_PROVIDER_INFO to_info() const;
    bool operator==(const ProviderKey &) const = default;
};

// The bits of an enumeration value that came from C. C lets callers pass any
// int where C++ only allows the enumerators' range, so values are inspected
// as integers before they are trusted as enumerators.
template <typename Enum>
std::underlying_type_t<Enum> raw_value(const Enum &value) {
    std::underlying_type_t<Enum> raw;
    std::memcpy(&raw, &value, sizeof raw);
    return raw;
}

// dat_strerror (dat_strerror.cpp).
DAT_RETURN strerror_impl(DAT_RETURN value, const char **major, const char **minor);

// True when `handle` cannot be a provider object (NULL, a small integer such
// as an IA index or DAT_EVD_ASYNC_EXISTS, or misaligned): dereferencing it
// would crash, so the registry answers DAT_INVALID_HANDLE instead. Inline: every
// forwarded data-path call checks its handle and the handle's provider table.
inline bool implausible_object_handle(const void *handle) {
    // Addresses below the first page are never objects (small integers, NULL).
    constexpr std::uintptr_t kLowestObjectAddress = 4096;
    auto address = reinterpret_cast<std::uintptr_t>(handle);
    return address < kLowestObjectAddress || address % alignof(DAT_PROVIDER *) != 0;
}

class Registry {
  public:
    static Registry &instance();

    DAT_RETURN open_ia(const char *name, DAT_COUNT async_evd_min_qlen, DAT_EVD_HANDLE *async_evd,
                       DAT_IA_HANDLE *ia, DAT_UINT32 major, DAT_UINT32 minor, bool thread_safe);
    // `flags`: the raw DAT_CLOSE_FLAGS value (validated here).
    DAT_RETURN close_ia(DAT_IA_HANDLE ia, std::underlying_type_t<DAT_CLOSE_FLAGS> flags);

    // The provider's IA handle behind a registry IA handle.
    DAT_RETURN provider_ia(DAT_IA_HANDLE ia, DAT_IA_HANDLE *provider_handle) const;
    bool is_open_ia(DAT_HANDLE handle) const;
    // The consumer's IA handle for a provider IA handle (NULL if not open).
    DAT_IA_HANDLE consumer_ia(DAT_IA_HANDLE provider_handle) const;

    DAT_RETURN add_provider(const DAT_PROVIDER *provider, const DAT_PROVIDER_INFO *info);
    DAT_RETURN remove_provider(const DAT_PROVIDER *provider, const DAT_PROVIDER_INFO *info);
    DAT_RETURN list_providers(DAT_COUNT max_to_return, DAT_COUNT *entries_returned,
                              DAT_PROVIDER_INFO *list[]);
    DAT_RETURN providers_related(const char *name1, const char *name2,
                                 DAT_HA_RELATIONSHIP *relationship);

    // Whether an IA of this table reported an extension: only then is its
    // handle_extendedop_func slot known to exist.
    bool has_extensions(const DAT_PROVIDER *table) const;

  private:
    // A library that may serve one static key; dat.conf may name several
    // for the same key, tried in file order.
    struct Candidate {
        std::string library_path;
        std::string ia_params;
    };

    struct StaticProvider {
        ProviderKey key;
        DAT_PROVIDER_INFO info{};  // what dat_provider_init/fini receive
        std::vector<Candidate> candidates;
        void *library = nullptr;  // dlopen handle while loaded
        std::size_t loaded_candidate = 0;
        DAT_PROVIDER_INIT_FUNC init = nullptr;
        DAT_PROVIDER_FINI_FUNC fini = nullptr;
        bool registered_by_library = false;  // the init call added the key
        int open_count = 0;
    };

    struct DynamicProvider {
        ProviderKey key;
        const DAT_PROVIDER *table = nullptr;
        DAT_IA_OPEN_FUNC ia_open = nullptr;
        int open_count = 0;
    };

    struct OpenIa {
        DAT_IA_HANDLE provider_handle = nullptr;
        ProviderKey key;
        StaticProvider *loaded_by = nullptr;  // static entry holding a reference, if any
        bool closing = false;
    };

    Registry() = default;

    void ensure_static_registry();
    StaticProvider *find_static(const ProviderKey &key);
    StaticProvider *acquire_static(const ProviderKey &key);
    void release_static(StaticProvider *entry);
    bool load_library(StaticProvider &entry);

    std::optional<DAT_IA_OPEN_FUNC> acquire_dynamic(const ProviderKey &key);
    void release_dynamic(const ProviderKey &key);
    bool dynamic_has(const ProviderKey &key);
    bool dynamic_remove_unused(const ProviderKey &key);

    DAT_RETURN_SUBTYPE not_found_reason(const ProviderKey &key);
    bool name_known(const std::string &name);
    void note_extension_support(DAT_IA_HANDLE provider_handle);

    std::optional<std::size_t> slot_index(DAT_HANDLE handle) const;
    std::size_t allocate_slot(OpenIa ia);

    std::once_flag static_once_;
    bool static_registry_missing_ = false;
    std::vector<std::unique_ptr<StaticProvider>> static_;  // fixed after ensure_static_registry

    mutable std::recursive_mutex load_mutex_;

    mutable std::mutex dynamic_mutex_;
    std::vector<DynamicProvider> dynamic_;
    std::set<const DAT_PROVIDER *> extension_tables_;

    mutable std::mutex ia_mutex_;
    std::vector<std::optional<OpenIa>> ia_slots_;  // index 0 is never used
    std::size_t next_slot_ = 1;
};

}  // namespace softrnic::dat
