// registry.cpp - static and dynamic registries, provider loading, IA handles.
#include "registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "dat_conf.hpp"

namespace softrnic::dat {
namespace {

// Where the static registry lives when $DAT_OVERRIDE is not set.
constexpr const char *kDefaultConfPath = "/etc/dat.conf";
constexpr const char *kOverrideVariable = "DAT_OVERRIDE";

// IA handles are indexes into a table that starts this large and grows by
// this much, so a closed handle is not handed out again for a while.
constexpr std::size_t kIaSlotStep = 64;

// Reads at most kMaxConfFileSize bytes; nullopt if the file cannot be opened.
std::optional<std::string> read_conf_file(const char *path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::string text(kMaxConfFileSize, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

}  // namespace

ProviderKey ProviderKey::from(const DAT_PROVIDER_INFO &info) {
    ProviderKey key;
    key.ia_name.assign(info.ia_name, strnlen(info.ia_name, DAT_NAME_MAX_LENGTH));
    key.major = info.dapl_version_major;
    key.minor = info.dapl_version_minor;
    key.thread_safe = raw_value(info.is_thread_safe) != DAT_FALSE;
    return key;
}

DAT_PROVIDER_INFO ProviderKey::to_info() const {
    DAT_PROVIDER_INFO info{};
    std::size_t n = std::min(ia_name.size(), static_cast<std::size_t>(DAT_NAME_MAX_LENGTH - 1));
    std::memcpy(info.ia_name, ia_name.data(), n);
    info.dapl_version_major = major;
    info.dapl_version_minor = minor;
    info.is_thread_safe = thread_safe ? DAT_TRUE : DAT_FALSE;
    return info;
}

Registry &Registry::instance() {
    // Never destroyed: consumers may still close IAs from their own exit
    // handlers, after static destructors would have run.
    static Registry *registry = new Registry();
    return *registry;
}

// ---------------------------------------------------------------------------
// Static registry
// ---------------------------------------------------------------------------

void Registry::ensure_static_registry() {
    std::call_once(static_once_, [this] {
        // An unreadable $DAT_OVERRIDE means no static registry at all, not a
        // fallback to the system file: the reference registry behaves so, and
        // a consumer that overrides the file never wants the system entries.
        const char *override_path = std::getenv(kOverrideVariable);
        auto text = read_conf_file(override_path != nullptr ? override_path : kDefaultConfPath);
        if (!text) {
            static_registry_missing_ = true;
            return;
        }
        for (ConfEntry &e : parse_dat_conf(*text).entries) {
            // Only user-level entries marked default are loadable here.
            if (e.api_kind != 'u' || !e.is_default) continue;
            ProviderKey key{e.ia_name, e.api_major, e.api_minor, e.thread_safe};
            StaticProvider *entry = find_static(key);
            if (entry == nullptr) {
                static_.push_back(std::make_unique<StaticProvider>());
                entry = static_.back().get();
                entry->key = key;
                entry->info = key.to_info();
            }
            entry->candidates.push_back({std::move(e.library_path), std::move(e.ia_params)});
        }
    });
}

Registry::StaticProvider *Registry::find_static(const ProviderKey &key) {
    for (auto &entry : static_) {
        if (entry->key == key) return entry.get();
    }
    return nullptr;
}

// Loads the first candidate library that dlopen accepts and looks up its entry points.
bool Registry::load_library(StaticProvider &entry) {
    for (std::size_t i = 0; i < entry.candidates.size(); ++i) {
        void *library = dlopen(entry.candidates[i].library_path.c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (library == nullptr) continue;
        entry.library = library;
        entry.loaded_candidate = i;
        entry.init =
            reinterpret_cast<DAT_PROVIDER_INIT_FUNC>(dlsym(library, DAT_PROVIDER_INIT_FUNC_STR));
        entry.fini =
            reinterpret_cast<DAT_PROVIDER_FINI_FUNC>(dlsym(library, DAT_PROVIDER_FINI_FUNC_STR));
        return true;
    }
    return false;
}

Registry::StaticProvider *Registry::acquire_static(const ProviderKey &key) {
    std::lock_guard lock(load_mutex_);
    StaticProvider *entry = find_static(key);
    if (entry == nullptr) return nullptr;
    bool registered_before = dynamic_has(key);
    if (entry->open_count == 0 && !load_library(*entry)) return nullptr;
    // Initialise on first use, and again if the provider removed itself
    // while still loaded (the specification asks for both).
    if (entry->init != nullptr && !dynamic_has(key)) {
        entry->info = key.to_info();
        entry->init(&entry->info, entry->candidates[entry->loaded_candidate].ia_params.c_str());
    }
    // Whatever the library added (in init or in a load-time constructor) is
    // its to remove before it is unloaded.
    if (!registered_before && dynamic_has(key)) entry->registered_by_library = true;
    ++entry->open_count;
    return entry;
}

void Registry::release_static(StaticProvider *entry) {
    if (entry == nullptr) return;
    std::lock_guard lock(load_mutex_);
    if (--entry->open_count > 0) return;
    if (entry->fini != nullptr) entry->fini(&entry->info);
    // A provider that forgot to unregister must not leave a table pointing
    // into a library that is about to be unloaded.
    if (entry->registered_by_library) dynamic_remove_unused(entry->key);
    entry->registered_by_library = false;
    entry->init = nullptr;
    entry->fini = nullptr;
    dlclose(entry->library);
    entry->library = nullptr;
}

// ---------------------------------------------------------------------------
// Dynamic registry
// ---------------------------------------------------------------------------

bool Registry::dynamic_has(const ProviderKey &key) {
    std::lock_guard lock(dynamic_mutex_);
    return std::any_of(dynamic_.begin(), dynamic_.end(),
                       [&](const DynamicProvider &p) { return p.key == key; });
}

std::optional<DAT_IA_OPEN_FUNC> Registry::acquire_dynamic(const ProviderKey &key) {
    std::lock_guard lock(dynamic_mutex_);
    for (auto &p : dynamic_) {
        if (p.key == key) {
            ++p.open_count;
            return p.ia_open;
        }
    }
    return std::nullopt;
}

void Registry::release_dynamic(const ProviderKey &key) {
    std::lock_guard lock(dynamic_mutex_);
    for (auto &p : dynamic_) {
        if (p.key == key && p.open_count > 0) {
            --p.open_count;
            return;
        }
    }
}

bool Registry::dynamic_remove_unused(const ProviderKey &key) {
    std::lock_guard lock(dynamic_mutex_);
    auto it = std::find_if(dynamic_.begin(), dynamic_.end(),
                           [&](const DynamicProvider &p) { return p.key == key; });
    if (it == dynamic_.end() || it->open_count > 0) return false;
    extension_tables_.erase(it->table);
    dynamic_.erase(it);
    return true;
}

DAT_RETURN Registry::add_provider(const DAT_PROVIDER *provider, const DAT_PROVIDER_INFO *info) {
    if (provider == nullptr || provider->ia_open_func == nullptr) {
        return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    }
    if (info == nullptr || info->ia_name[0] == '\0' ||
        strnlen(info->ia_name, DAT_NAME_MAX_LENGTH) == DAT_NAME_MAX_LENGTH) {
        return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    }
    ensure_static_registry();
    ProviderKey key = ProviderKey::from(*info);
    std::lock_guard lock(dynamic_mutex_);
    for (const auto &p : dynamic_) {
        if (p.key == key) return dat_error(DAT_PROVIDER_ALREADY_REGISTERED);
    }
    dynamic_.push_back({std::move(key), provider, provider->ia_open_func, 0});
    return DAT_SUCCESS;
}

DAT_RETURN Registry::remove_provider(const DAT_PROVIDER *provider, const DAT_PROVIDER_INFO *info) {
    if (provider == nullptr) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    if (info == nullptr) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ensure_static_registry();
    ProviderKey key = ProviderKey::from(*info);
    std::lock_guard lock(dynamic_mutex_);
    auto it = std::find_if(dynamic_.begin(), dynamic_.end(),
                           [&](const DynamicProvider &p) { return p.key == key; });
    if (it == dynamic_.end()) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (it->open_count > 0) return dat_error(DAT_PROVIDER_IN_USE);
    extension_tables_.erase(it->table);
    dynamic_.erase(it);
    return DAT_SUCCESS;
}

DAT_RETURN Registry::list_providers(DAT_COUNT max_to_return, DAT_COUNT *entries_returned,
                                    DAT_PROVIDER_INFO *list[]) {
    if (entries_returned == nullptr) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    *entries_returned = 0;
    ensure_static_registry();
    if (static_registry_missing_) return dat_error(DAT_INTERNAL_ERROR);
    auto registry_size = static_cast<DAT_COUNT>(static_.size());
    // Asking for nothing is how consumers learn the size.
    if (max_to_return <= 0) {
        *entries_returned = registry_size;
        return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    }
    if (list == nullptr) {
        *entries_returned = registry_size;
        return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    }
    // A shorter list gets the first entries, as deployed consumers expect.
    DAT_COUNT n = std::min(max_to_return, registry_size);
    for (DAT_COUNT i = 0; i < n; ++i) {
        if (list[i] == nullptr) {
            *entries_returned = registry_size;
            return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
        }
    }
    for (DAT_COUNT i = 0; i < n; ++i)
        *list[i] = static_[static_cast<std::size_t>(i)]->key.to_info();
    *entries_returned = n;
    return DAT_SUCCESS;
}

// ---------------------------------------------------------------------------
// Opening and closing IAs
// ---------------------------------------------------------------------------

// Which part of a failed lookup matched nothing, most specific first.
DAT_RETURN_SUBTYPE Registry::not_found_reason(const ProviderKey &key) {
    std::vector<ProviderKey> known;
    for (const auto &entry : static_)
        known.push_back(entry->key);
    {
        std::lock_guard lock(dynamic_mutex_);
        for (const auto &p : dynamic_)
            known.push_back(p.key);
    }
    auto any = [&](auto predicate) { return std::any_of(known.begin(), known.end(), predicate); };
    auto same_name = [&](const ProviderKey &k) { return k.ia_name == key.ia_name; };
    auto same_major = [&](const ProviderKey &k) { return same_name(k) && k.major == key.major; };
    auto same_version = [&](const ProviderKey &k) { return same_major(k) && k.minor == key.minor; };
    if (!any(same_name)) return DAT_NAME_NOT_REGISTERED;
    if (!any(same_major)) return DAT_MAJOR_NOT_FOUND;
    if (!any(same_version)) return DAT_MINOR_NOT_FOUND;
    if (!any([&](const ProviderKey &k) { return k == key; })) return DAT_THREAD_SAFETY_NOT_FOUND;
    return DAT_NAME_NOT_REGISTERED;  // listed, but its library did not load or register
}

bool Registry::name_known(const std::string &name) {
    for (const auto &entry : static_) {
        if (entry->key.ia_name == name) return true;
    }
    std::lock_guard lock(dynamic_mutex_);
    return std::any_of(dynamic_.begin(), dynamic_.end(),
                       [&](const DynamicProvider &p) { return p.key.ia_name == name; });
}

void Registry::note_extension_support(DAT_IA_HANDLE provider_handle) {
    const DAT_PROVIDER *table = DAT_HANDLE_TO_PROVIDER(provider_handle);
    if (table->ia_query_func == nullptr) return;
    // Providers are used to this exact call from the reference registry.
    DAT_IA_ATTR attr{};
    if (table->ia_query_func(provider_handle, nullptr, DAT_IA_FIELD_ALL, &attr, 0, nullptr) !=
        DAT_SUCCESS) {
        return;
    }
    if (raw_value(attr.extension_supported) == DAT_EXTENSION_NONE) return;
    std::lock_guard lock(dynamic_mutex_);
    extension_tables_.insert(table);
}

bool Registry::has_extensions(const DAT_PROVIDER *table) const {
    std::lock_guard lock(dynamic_mutex_);
    return extension_tables_.count(table) != 0;
}

std::size_t Registry::allocate_slot(OpenIa ia) {
    std::lock_guard lock(ia_mutex_);
    if (ia_slots_.empty()) ia_slots_.resize(kIaSlotStep);
    // Next free slot after the last one handed out, wrapping once; grow when full.
    auto is_free = [&](std::size_t i) { return !ia_slots_[i].has_value(); };
    std::size_t found = 0;
    for (std::size_t i = next_slot_; i < ia_slots_.size() && found == 0; ++i) {
        if (is_free(i)) found = i;
    }
    for (std::size_t i = 1; i < next_slot_ && found == 0; ++i) {
        if (is_free(i)) found = i;
    }
    if (found == 0) {
        found = ia_slots_.size();
        ia_slots_.resize(ia_slots_.size() + kIaSlotStep);
    }
    ia_slots_[found] = std::move(ia);
    next_slot_ = found + 1;
    return found;
}

std::optional<std::size_t> Registry::slot_index(DAT_HANDLE handle) const {
    auto index = reinterpret_cast<std::uintptr_t>(handle);
    if (index == 0 || index >= ia_slots_.size() || !ia_slots_[index].has_value()) {
        return std::nullopt;
    }
    return static_cast<std::size_t>(index);
}

bool Registry::is_open_ia(DAT_HANDLE handle) const {
    std::lock_guard lock(ia_mutex_);
    return slot_index(handle).has_value();
}

DAT_IA_HANDLE Registry::consumer_ia(DAT_IA_HANDLE provider_handle) const {
    std::lock_guard lock(ia_mutex_);
    for (std::size_t i = 1; i < ia_slots_.size(); ++i) {
        if (ia_slots_[i] && ia_slots_[i]->provider_handle == provider_handle) {
            return DAT_UL_TO_IA_HANDLE(i);
        }
    }
    return DAT_HANDLE_NULL;
}

DAT_RETURN Registry::provider_ia(DAT_IA_HANDLE ia, DAT_IA_HANDLE *provider_handle) const {
    std::lock_guard lock(ia_mutex_);
    auto index = slot_index(ia);
    if (!index) return dat_error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    *provider_handle = ia_slots_[*index]->provider_handle;
    return DAT_SUCCESS;
}

DAT_RETURN Registry::open_ia(const char *name, DAT_COUNT async_evd_min_qlen,
                             DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia, DAT_UINT32 major,
                             DAT_UINT32 minor, bool thread_safe) {
    if (name == nullptr || name[0] == '\0' ||
        strnlen(name, DAT_NAME_MAX_LENGTH) == DAT_NAME_MAX_LENGTH) {
        return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    }
    if (async_evd == nullptr) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (ia == nullptr) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);

    ensure_static_registry();
    ProviderKey key{name, major, minor, thread_safe};

    StaticProvider *loaded_by = acquire_static(key);
    auto ia_open = acquire_dynamic(key);
    if (!ia_open) {
        release_static(loaded_by);
        return dat_error(DAT_PROVIDER_NOT_FOUND, not_found_reason(key));
    }

    DAT_IA_HANDLE provider_handle = nullptr;
    DAT_RETURN status =
        (*ia_open)(const_cast<DAT_NAME_PTR>(name), async_evd_min_qlen, async_evd, &provider_handle);
    if (status == DAT_SUCCESS && implausible_object_handle(provider_handle)) {
        // A provider bug; nothing safe can be done with that handle.
        status = dat_error(DAT_INTERNAL_ERROR);
    }
    if (status != DAT_SUCCESS) {
        release_dynamic(key);
        release_static(loaded_by);
        return status;
    }

    std::size_t slot = 0;
    try {
        slot = allocate_slot({provider_handle, key, loaded_by, false});
    } catch (...) {
        const DAT_PROVIDER *table = DAT_HANDLE_TO_PROVIDER(provider_handle);
        if (table != nullptr && table->ia_close_func != nullptr) {
            table->ia_close_func(provider_handle, DAT_CLOSE_ABRUPT_FLAG);
        }
        release_dynamic(key);
        release_static(loaded_by);
        return dat_error(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    }
    note_extension_support(provider_handle);
    *ia = DAT_UL_TO_IA_HANDLE(slot);
    return DAT_SUCCESS;
}

DAT_RETURN Registry::close_ia(DAT_IA_HANDLE ia, std::underlying_type_t<DAT_CLOSE_FLAGS> raw_flags) {
    if (raw_flags != DAT_CLOSE_ABRUPT_FLAG && raw_flags != DAT_CLOSE_GRACEFUL_FLAG) {
        return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    }
    auto flags = static_cast<DAT_CLOSE_FLAGS>(raw_flags);
    std::size_t index = 0;
    DAT_IA_HANDLE provider_handle = nullptr;
    {
        std::lock_guard lock(ia_mutex_);
        auto found = slot_index(ia);
        if (!found || ia_slots_[*found]->closing) {
            return dat_error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
        }
        index = *found;
        ia_slots_[index]->closing = true;  // a concurrent second close fails
        provider_handle = ia_slots_[index]->provider_handle;
    }

    const DAT_PROVIDER *table = DAT_HANDLE_TO_PROVIDER(provider_handle);
    DAT_RETURN status = (table != nullptr && table->ia_close_func != nullptr)
                            ? table->ia_close_func(provider_handle, flags)
                            : dat_error(DAT_INTERNAL_ERROR);

    std::optional<OpenIa> closed;
    {
        std::lock_guard lock(ia_mutex_);
        if (status != DAT_SUCCESS) {
            // Still open (e.g. a graceful close with objects left): usable as before.
            ia_slots_[index]->closing = false;
            return status;
        }
        closed = std::move(ia_slots_[index]);
        ia_slots_[index].reset();
    }
    release_dynamic(closed->key);
    release_static(closed->loaded_by);
    return DAT_SUCCESS;
}

// ---------------------------------------------------------------------------
// High availability
// ---------------------------------------------------------------------------

DAT_RETURN Registry::providers_related(const char *name1, const char *name2,
                                       DAT_HA_RELATIONSHIP *relationship) {
    if (name1 == nullptr || strnlen(name1, DAT_NAME_MAX_LENGTH) == DAT_NAME_MAX_LENGTH) {
        return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    }
    if (name2 == nullptr || strnlen(name2, DAT_NAME_MAX_LENGTH) == DAT_NAME_MAX_LENGTH) {
        return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    }
    if (relationship == nullptr) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    ensure_static_registry();
    if (!name_known(name1)) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    if (!name_known(name2)) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);

    // Each side's provider answers through one of its open IAs; without an
    // open IA on both sides nobody can be asked.
    DAT_IA_HANDLE ia1 = nullptr;
    DAT_IA_HANDLE ia2 = nullptr;
    {
        std::lock_guard lock(ia_mutex_);
        for (const auto &slot : ia_slots_) {
            if (!slot || slot->closing) continue;
            if (ia1 == nullptr && slot->key.ia_name == name1) ia1 = slot->provider_handle;
            if (ia2 == nullptr && slot->key.ia_name == name2) ia2 = slot->provider_handle;
        }
    }
    *relationship = DAT_HA_UNKNOWN;
    if (ia1 == nullptr || ia2 == nullptr) return DAT_SUCCESS;
    auto ask = [](DAT_IA_HANDLE ia, const char *other, DAT_BOOLEAN *answer) {
        const DAT_PROVIDER *table = DAT_HANDLE_TO_PROVIDER(ia);
        return table->ia_ha_related_func != nullptr &&
               table->ia_ha_related_func(ia, const_cast<DAT_NAME_PTR>(other), answer) ==
                   DAT_SUCCESS;
    };
    DAT_BOOLEAN first = DAT_FALSE;
    DAT_BOOLEAN second = DAT_FALSE;
    if (!ask(ia1, name2, &first) || !ask(ia2, name1, &second)) return DAT_SUCCESS;
    bool first_says = raw_value(first) != DAT_FALSE;
    bool second_says = raw_value(second) != DAT_FALSE;
    if (first_says != second_says) {
        *relationship = DAT_HA_CONFLICTING;
    } else {
        *relationship = first_says ? DAT_HA_TRUE : DAT_HA_FALSE;
    }
    return DAT_SUCCESS;
}

}  // namespace softrnic::dat
