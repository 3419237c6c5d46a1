#include "util/tls_server.hpp"

#include <openssl/err.h>

namespace linecap {

std::string tls_error_text() {
    char text[256] = "unknown error";
    if (const unsigned long error = ::ERR_get_error(); error != 0) ::ERR_error_string_n(error, text, sizeof text);
    ::ERR_clear_error();
    return text;
}

Result<SslCtx> tls_server_context(const TlsServerFiles& files, ClientCertificate client) {
    SslCtx ctx(::SSL_CTX_new(TLS_server_method()));
    if (!ctx) return runtime_error(files.section + ": SSL_CTX_new: " + tls_error_text());
    ::SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
    ::SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    ::SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    const std::string key = files.section + ".tls_";
    if (::SSL_CTX_use_certificate_chain_file(ctx.get(), files.cert.c_str()) != 1)
        return config_error(key + "cert " + files.cert + ": cannot load the certificate chain: " + tls_error_text());
    if (::SSL_CTX_use_PrivateKey_file(ctx.get(), files.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        ::SSL_CTX_check_private_key(ctx.get()) != 1)
        return config_error(key + "key " + files.key + ": cannot load the key, or it does not match " + key +
                            "cert: " + tls_error_text());
    if (files.client_ca.empty()) return ctx;
    STACK_OF(X509_NAME)* names = ::SSL_load_client_CA_file(files.client_ca.c_str());
    if (names == nullptr || ::SSL_CTX_load_verify_locations(ctx.get(), files.client_ca.c_str(), nullptr) != 1) {
        if (names != nullptr) sk_X509_NAME_pop_free(names, X509_NAME_free);
        return config_error(key + "client_ca " + files.client_ca + ": cannot load the CA bundle: " + tls_error_text());
    }
    ::SSL_CTX_set_client_CA_list(ctx.get(), names);
    ::SSL_CTX_set_verify(ctx.get(),
                         SSL_VERIFY_PEER | (client == ClientCertificate::required ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                         nullptr);
    return ctx;
}

}  // namespace linecap
