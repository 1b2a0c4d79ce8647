/*
 * rayop --real-ray: gives every process of a pod its own loopback address.
 *
 * Loaded with LD_PRELOAD into each container process (and everything it forks), with the pod's
 * address in RAYOP_POD_IP (127.x.y.z). A bind() to the wildcard address or to 127.0.0.1 binds
 * the pod's address instead, and a connect() to 127.0.0.1 reaches the pod's address, so two pods
 * can both listen on Ray's fixed ports (6379, 8265, 52365, 10001, ...) on one machine, and
 * "localhost" inside a pod means that pod, as in a pod's network namespace. IPv6 sockets get
 * the same address v4-mapped (::ffff:127.x.y.z). An IPV6_V6ONLY socket cannot take a v4-mapped
 * address (bind and connect fail with EINVAL), so one that is about to be rewritten has the
 * option cleared first: redis-server's default `bind * -::*` binds 0.0.0.0 and then [::] with
 * IPV6_V6ONLY set (https://github.com/redis/redis/blob/7.0/src/anet.c, anetV6Only), and a
 * pod's [::]:port must still answer at the pod's address. The pod has no IPv6 address of its
 * own here, so its v4-mapped one stands for it; the [::] socket's bind then meets the port
 * the 0.0.0.0 socket holds and is handled as a second bind of one port (see held_ports).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static struct in_addr pod_ip;
static int loaded = -1;

static int have_pod_ip(void) {
    if (loaded < 0) {
        const char *text = getenv("RAYOP_POD_IP");
        loaded = text != NULL && inet_pton(AF_INET, text, &pod_ip) == 1;
    }
    return loaded;
}

static int is_v4_host(const struct in6_addr *a, uint32_t host) {
    uint32_t v4;
    if (!IN6_IS_ADDR_V4MAPPED(a)) return 0;
    memcpy(&v4, &a->s6_addr[12], 4);
    return ntohl(v4) == host;
}

/* Returns the length of the rewritten address in *out, or 0 to keep the caller's address. */
static socklen_t rewrite(const struct sockaddr *addr, socklen_t len,
                         struct sockaddr_storage *out, int binding) {
    if (addr == NULL || !have_pod_ip()) return 0;
    if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in a;
        memcpy(&a, addr, sizeof a);
        uint32_t host = ntohl(a.sin_addr.s_addr);
        if ((binding && host == INADDR_ANY) || host == INADDR_LOOPBACK) {
            a.sin_addr = pod_ip;
            memcpy(out, &a, sizeof a);
            return sizeof a;
        }
    } else if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 a;
        memcpy(&a, addr, sizeof a);
        int any = IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr) || is_v4_host(&a.sin6_addr, INADDR_ANY);
        int loopback = IN6_IS_ADDR_LOOPBACK(&a.sin6_addr) ||
                       is_v4_host(&a.sin6_addr, INADDR_LOOPBACK);
        if ((binding && any) || loopback) {
            memset(&a.sin6_addr, 0, sizeof a.sin6_addr);
            a.sin6_addr.s6_addr[10] = 0xff;
            a.sin6_addr.s6_addr[11] = 0xff;
            memcpy(&a.sin6_addr.s6_addr[12], &pod_ip, 4);
            memcpy(out, &a, sizeof a);
            return sizeof a;
        }
    }
    return 0;
}

typedef int (*socket_call)(int, const struct sockaddr *, socklen_t);

/* Lets an AF_INET6 socket use the v4-mapped address it is being given (see the top comment).
 * Only an unbound, unconnected socket can change IPV6_V6ONLY; for any other the kernel's own
 * answer to the rewritten address stands. */
static void allow_v4_mapped(int fd, const struct sockaddr_storage *rewritten) {
    int v6only = 0;
    socklen_t size = sizeof v6only;
    if (rewritten->ss_family != AF_INET6) return;
    if (getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &size) != 0 || !v6only) return;
    v6only = 0;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
}

/* Ports this process already bound at the pod's address. A server that binds both 127.0.0.1
 * and the node's address on one port (Ray's dashboard agent does) would see the second bind
 * fail, since both are the pod's address here; that second bind gets a spare port instead and
 * reports success: clients of either address reach the first socket, in the same process. */
static int held_ports[256];
static int held_count;

static int port_of(const struct sockaddr_storage *a) {
    if (a->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)a)->sin_port);
    return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
}

static int held(int port) {
    for (int i = 0; i < held_count; i++) if (held_ports[i] == port) return 1;
    return 0;
}

static int targets_pod_ip(const struct sockaddr_storage *a) {
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == pod_ip.s_addr;
    if (a->ss_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
        return IN6_IS_ADDR_V4MAPPED(v6) && memcmp(&v6->s6_addr[12], &pod_ip, 4) == 0;
    }
    return 0;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static socket_call real_bind;
    struct sockaddr_storage storage;
    if (real_bind == NULL) real_bind = (socket_call)dlsym(RTLD_NEXT, "bind");
    socklen_t n = rewrite(addr, len, &storage, 1);
    if (n != 0) allow_v4_mapped(fd, &storage);
    if (n == 0) {
        if (addr == NULL || !have_pod_ip() || len > (socklen_t)sizeof storage ||
            (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
            return real_bind(fd, addr, len);
        memcpy(&storage, addr, len);
        n = len;
        if (!targets_pod_ip(&storage)) return real_bind(fd, addr, len);
    }
    int port = port_of(&storage);
    int rc = real_bind(fd, (struct sockaddr *)&storage, n);
    if (rc == 0 && port != 0 && held_count < 256) {
        held_ports[held_count++] = port;
    } else if (rc != 0 && errno == EADDRINUSE && port != 0 && held(port)) {
        if (storage.ss_family == AF_INET) ((struct sockaddr_in *)&storage)->sin_port = 0;
        else ((struct sockaddr_in6 *)&storage)->sin6_port = 0;
        rc = real_bind(fd, (struct sockaddr *)&storage, n);
    }
    return rc;
}

/* An unbound socket dialling a loopback address leaves from the pod's address (as from a pod's
 * own network namespace), so peers and getsockname() see the pod IP, not 127.0.0.1. */
static void bind_source(int fd, const struct sockaddr *dest, socklen_t len, socket_call real_bind) {
    struct sockaddr_storage local;
    socklen_t local_len = sizeof local;
    int loopback_dest = 0;
    if (dest == NULL || !have_pod_ip()) return;
    if (dest->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        loopback_dest = (ntohl(((const struct sockaddr_in *)dest)->sin_addr.s_addr) >> 24) == 127;
    } else if (dest->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)dest)->sin6_addr;
        loopback_dest = IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    if (!loopback_dest) return;
    if (getsockname(fd, (struct sockaddr *)&local, &local_len) != 0) return;
    if (local.ss_family == AF_INET) {
        struct sockaddr_in *l = (struct sockaddr_in *)&local;
        if (l->sin_port != 0 || l->sin_addr.s_addr != htonl(INADDR_ANY)) return;
        l->sin_addr = pod_ip;
        real_bind(fd, (struct sockaddr *)l, sizeof *l);
    } else if (local.ss_family == AF_INET6) {
        struct sockaddr_in6 *l = (struct sockaddr_in6 *)&local;
        if (l->sin6_port != 0 || !IN6_IS_ADDR_UNSPECIFIED(&l->sin6_addr)) return;
        if (dest->sa_family != AF_INET6) return;
        const struct in6_addr *a = &((const struct sockaddr_in6 *)dest)->sin6_addr;
        if (!IN6_IS_ADDR_V4MAPPED(a) && !IN6_IS_ADDR_LOOPBACK(a)) return;
        l->sin6_addr.s6_addr[10] = 0xff;
        l->sin6_addr.s6_addr[11] = 0xff;
        memcpy(&l->sin6_addr.s6_addr[12], &pod_ip, 4);
        real_bind(fd, (struct sockaddr *)l, sizeof *l);
    }
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static socket_call real_connect;
    static socket_call real_bind;
    struct sockaddr_storage storage;
    if (real_connect == NULL) real_connect = (socket_call)dlsym(RTLD_NEXT, "connect");
    if (real_bind == NULL) real_bind = (socket_call)dlsym(RTLD_NEXT, "bind");
    socklen_t n = rewrite(addr, len, &storage, 0);
    const struct sockaddr *dest = n == 0 ? addr : (const struct sockaddr *)&storage;
    socklen_t dest_len = n == 0 ? len : n;
    if (n != 0) allow_v4_mapped(fd, &storage);
    bind_source(fd, dest, dest_len, real_bind);
    return real_connect(fd, dest, dest_len);
}

/* A UDP socket "connected" to an outside address is how Ray (and others) learn their own IP
 * (connect to 8.8.8.8, read getsockname()). From inside a pod the answer is the pod's IP, so
 * that is what such a socket reports; every other socket reports its real address. */
int getsockname(int fd, struct sockaddr *addr, socklen_t *len) {
    typedef int (*name_call)(int, struct sockaddr *, socklen_t *);
    static name_call real_getsockname;
    if (real_getsockname == NULL) real_getsockname = (name_call)dlsym(RTLD_NEXT, "getsockname");
    int rc = real_getsockname(fd, addr, len);
    if (rc != 0 || addr == NULL || !have_pod_ip() || addr->sa_family != AF_INET ||
        *len < (socklen_t)sizeof(struct sockaddr_in))
        return rc;
    int type = 0;
    socklen_t type_len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_DGRAM) return rc;
    struct sockaddr_in peer;
    socklen_t peer_len = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &peer_len) != 0 || peer.sin_family != AF_INET)
        return rc;
    if ((ntohl(peer.sin_addr.s_addr) >> 24) == 127) return rc;
    ((struct sockaddr_in *)addr)->sin_addr = pod_ip;
    return rc;
}
