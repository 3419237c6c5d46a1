// Result<T>: a value or an error message with context, for init code.
//
// Init code returns Result; only main turns an error into an exit code. Context is
// prepended on the way up ("port tap0: rx queue 3: rte_eth_rx_queue_setup: -ENOMEM").
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace linecap {

struct Error {
    std::string message;
    // Configuration errors map to exit code 78 (EX_CONFIG); everything else to 1.
    bool config = false;

    Error context(const std::string& prefix) const& { return Error{prefix + ": " + message, config}; }
};

inline Error config_error(std::string message) { return Error{std::move(message), true}; }
inline Error runtime_error(std::string message) { return Error{std::move(message), false}; }

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error error) : v_(std::move(error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    const T& value() const& { return std::get<0>(v_); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }

    const Error& error() const { return std::get<1>(v_); }

    Result context(const std::string& prefix) && {
        if (ok()) return std::move(*this);
        return error().context(prefix);
    }

private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), ok_(false) {}

    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const Error& error() const { return error_; }

    Result context(const std::string& prefix) && {
        if (ok_) return {};
        return error_.context(prefix);
    }

private:
    Error error_;
    bool ok_ = true;
};

using Status = Result<void>;

}  // namespace linecap
