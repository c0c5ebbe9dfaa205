#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "config.h"
#include "machine.h"
#include "memory.h"
#include "revision.h"
#include "timer.h"

const char *attn_build_compiler(void) { return ATTN_COMPILER; }
const char *attn_build_options(void) { return ATTN_BUILD_OPTIONS; }
const char *attn_build_type(void) { return ATTN_BUILD_TYPE; }
const char *attn_git_revision(void) { return ATTN_GIT_REVISION; }

/* The first line of a file, without its newline; false when unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    const bool ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

static void cpuinfo(attn_machine *m)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(m->cpu, sizeof(m->cpu), "unknown");
    if (!f)
        return;
    char line[512];
    bool model = false, mhz = false;
    while (fgets(line, sizeof(line), f) && !(model && mhz)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1 + strspn(colon + 1, " \t");
        v[strcspn(v, "\n")] = '\0';
        if (!model && !strncmp(line, "model name", 10)) {
            snprintf(m->cpu, sizeof(m->cpu), "%s", v);
            model = true;
        } else if (!mhz && !strncmp(line, "cpu MHz", 7)) {
            m->mhz = atof(v);
            mhz = true;
        }
    }
    fclose(f);
}

/* Caches of CPU 0 from sysfs; size strings look like "48K" or "2048K". */
static void caches(attn_machine *m)
{
    for (int i = 0; i < 8 && m->ncaches < 8; i++) {
        char path[128], buf[128];
        attn_cache_info c = { 0 };
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (!read_line(path, buf, sizeof(buf)))
            break;
        c.level = atoi(buf);
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (read_line(path, buf, sizeof(buf)))
            snprintf(c.type, sizeof(c.type), "%.15s", buf);
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (read_line(path, buf, sizeof(buf))) {
            char *end;
            c.size = strtoull(buf, &end, 10);
            c.size <<= *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
        }
        snprintf(path, sizeof(path),
                 "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
        if (read_line(path, buf, sizeof(buf))) {
            /* "0-3,8-11": count the CPUs in the ranges */
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                int a, b;
                const int k = sscanf(tok, "%d-%d", &a, &b);
                c.sharing += k == 2 ? b - a + 1 : k == 1 ? 1 : 0;
            }
        }
        m->caches[m->ncaches++] = c;
    }
}

static void os_name(attn_machine *m)
{
    struct utsname u;
    char pretty[128] = "";
    FILE *f = fopen("/etc/os-release", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof(line), f)) {
            if (!strncmp(line, "PRETTY_NAME=", 12)) {
                char *v = line + 12 + (line[12] == '"');
                v[strcspn(v, "\"\n")] = '\0';
                snprintf(pretty, sizeof(pretty), "%s", v);
            }
        }
        fclose(f);
    }
    if (uname(&u) == 0)
        snprintf(m->os, sizeof(m->os), "%.60s%s%.20s %.40s %.20s", pretty, *pretty ? ", " : "",
                 u.sysname, u.release, u.machine);
    else
        snprintf(m->os, sizeof(m->os), "%s", *pretty ? pretty : "unknown");
}

static void backend_versions(attn_machine *m)
{
    size_t at = 0;
    for (size_t i = 0; i < attn_backend_count() && at < sizeof(m->backends); i++) {
        const attn_backend *be = attn_backend_get(i);
        if (be->not_built)
            continue;
        const char *v = attn_backend_version(be);
        at += (size_t)snprintf(m->backends + at, sizeof(m->backends) - at, "%s%s%s%s%s",
                               at ? "; " : "", be->name, v ? " (" : "", v ? v : "", v ? ")" : "");
    }
}

void attn_machine_capture(attn_machine *m, int threads, const char *pinned)
{
    memset(m, 0, sizeof(*m));
    if (gethostname(m->host, sizeof(m->host) - 1))
        snprintf(m->host, sizeof(m->host), "unknown");
    cpuinfo(m);
    caches(m);
    os_name(m);
    if (!read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", m->governor,
                   sizeof(m->governor)))
        snprintf(m->governor, sizeof(m->governor), "unknown");
    const time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(m->date, sizeof(m->date), "%Y-%m-%dT%H:%M:%S%z", &tm);
    m->cpus_online = (int)sysconf(_SC_NPROCESSORS_ONLN);
    m->threads = threads;
    snprintf(m->pinned, sizeof(m->pinned), "%s", pinned ? pinned : "");
    char thp[32];
    attn_huge_pages_mode(thp, sizeof(thp));
    if (!attn_host_huge_pages_on())
        snprintf(m->huge_pages, sizeof(m->huge_pages), "off");
    else if (!strcmp(thp, "never"))
        snprintf(m->huge_pages, sizeof(m->huge_pages), "on, but THP never: 4 KiB pages");
    else
        snprintf(m->huge_pages, sizeof(m->huge_pages), "on (THP %s)", thp);
    if (getloadavg(m->load, 3) != 3)
        m->load[0] = m->load[1] = m->load[2] = -1;
    attn_clock_resolution(&m->clock_res, &m->clock_step);
    backend_versions(m);
    m->peak_known = attn_peak_load(&m->peak, threads, m->cpu);
}

void attn_machine_print(FILE *f, const attn_machine *m)
{
    fprintf(f, "machine: %s, %d CPUs, %s; governor %s; %s\n", m->cpu, m->cpus_online, m->os,
            m->governor, m->host);
    fprintf(f, "build: attnbench %s (%s), %s, %s; backends: %s\n", ATTN_VERSION,
            attn_git_revision(), attn_build_compiler(), attn_build_options(), m->backends);
    fprintf(f, "clock: CLOCK_MONOTONIC resolution %.0f ns, smallest observed step %.0f ns; "
               "threads %d%s%s; huge pages %s\n", m->clock_res * 1e9, m->clock_step * 1e9,
            m->threads, *m->pinned ? ", pinned to " : "", m->pinned, m->huge_pages);
    if (m->peak_known)
        fprintf(f, "peak: fp32 FMA %.1f GFLOP/s on 1 thread, %.1f on %d (%s); triad %.1f GB/s, "
                   "read-only %.1f GB/s\n", m->peak.fma_1, m->peak.fma_t, m->peak.threads,
                m->peak.isa, m->peak.triad, m->peak.read);
    if (m->peak_known && m->peak.dot_t > 0)
        fprintf(f, "peak: bf16 dot products %.1f GFLOP/s on 1 thread, %.1f on %d (avx512bf16): "
                   "the %%peak of bf16 cases\n", m->peak.dot_1, m->peak.dot_t, m->peak.threads);
    else if (!m->peak_known)
        fprintf(f, "peak: not measured for %d threads on this CPU (run attnbench --peak "
                   "--threads %d for %% of peak)\n", m->threads, m->threads);
}
