// The TLS server context of the appliance's listeners (the retrieval API, the live feed):
// TLS 1.2 or later, no compression or renegotiation, partial writes (their writers are
// non-blocking and retry a write from where it stopped), the server's chain and key, and
// client certificates checked against a CA bundle.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "util/result.hpp"

namespace linecap {

struct SslCtxFree {
    void operator()(SSL_CTX* ctx) const { ::SSL_CTX_free(ctx); }
};
using SslCtx = std::unique_ptr<SSL_CTX, SslCtxFree>;

struct TlsServerFiles {
    std::string section;     // the configuration section the keys are in ("api", "feed"), for errors
    std::string cert;        // PEM chain: SECTION.tls_cert
    std::string key;         // PEM key: SECTION.tls_key
    std::string client_ca;   // SECTION.tls_client_ca; "" asks for no client certificate
};

enum class ClientCertificate {
    required,  // a client without one is refused in the handshake
    optional,  // asked for; a client may come without (it authenticates otherwise), but one it presents must verify
};

// Errors (config errors) name the key whose file cannot be used, and what OpenSSL said.
Result<SslCtx> tls_server_context(const TlsServerFiles& files, ClientCertificate client);

// OpenSSL's last error on this thread, as text (the queue is cleared).
std::string tls_error_text();

}  // namespace linecap
