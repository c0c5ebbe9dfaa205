#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "models.h"

/* DeepSeek-V3's softmax scale: qk_head_dim^-1/2 with qk_head_dim = 128 +
 * 64 (no-RoPE and RoPE parts), times mscale^2 of its YaRN scaling,
 * mscale = 0.1 ln(factor 40) + 1 (config.json rope_scaling: mscale_all_dim
 * 1; modeling_deepseek.py, DeepseekV3Attention). About 0.1352. */
#define DEEPSEEK_V3_SCALE (pow(192.0, -0.5) * (0.1 * log(40.0) + 1.0) * (0.1 * log(40.0) + 1.0))

#define WINDOW(L) { .window = true, .left = (L), .right = 0 }

static const attn_model models[] = {
    { "llama-3.1-8b", 32, 8, 128, 128, 0, true, { 0 },
      "meta-llama/Llama-3.1-8B config.json: 32 heads, 8 KV heads, hidden 4096" },
    { "llama-3.1-70b", 64, 8, 128, 128, 0, true, { 0 },
      "meta-llama/Llama-3.1-70B config.json: 64 heads, 8 KV heads, hidden 8192" },
    { "llama-3.2-1b", 32, 8, 64, 64, 0, true, { 0 },
      "meta-llama/Llama-3.2-1B config.json: 32 heads, 8 KV heads, head_dim 64" },
    { "mistral-7b", 32, 8, 128, 128, 0, true, WINDOW(4096),
      "mistralai/Mistral-7B-v0.1 config.json: 32 heads, 8 KV heads, sliding_window 4096" },
    { "qwen2.5-7b", 28, 4, 128, 128, 0, true, { 0 },
      "Qwen/Qwen2.5-7B config.json: 28 heads, 4 KV heads, hidden 3584" },
    { "gemma-2-9b-local", 16, 8, 256, 256, 0, true,
      { .window = true, .left = 4096, .softcap = 50.0f },
      "google/gemma-2-9b config.json: 16 heads, 8 KV heads, head_dim 256, "
      "query_pre_attn_scalar 256, attn_logit_softcapping 50, sliding_window 4096 "
      "(its local layers)" },
    { "gemma-2-9b-global", 16, 8, 256, 256, 0, true, { .softcap = 50.0f },
      "google/gemma-2-9b config.json: as gemma-2-9b-local, without the window "
      "(its global layers)" },
    { "gpt-oss-20b-local", 64, 8, 64, 64, 0, true,
      { .window = true, .left = 128, .sinks = true },
      "openai/gpt-oss-20b config.json: 64 heads, 8 KV heads, head_dim 64, sliding_window "
      "128, a learned sink per head (its sliding layers)" },
    { "gpt-oss-20b-global", 64, 8, 64, 64, 0, true, { .sinks = true },
      "openai/gpt-oss-20b config.json: as gpt-oss-20b-local, without the window (its full "
      "layers)" },
    { "deepseek-v3-decode", 128, 1, 576, 512, 0.0 /* DEEPSEEK_V3_SCALE */, true,
      { .v_from_k = true },
      "deepseek-ai/DeepSeek-V3 config.json: 128 heads, kv_lora_rank 512 + "
      "qk_rope_head_dim 64; absorbed MLA decode reads one latent head (dk 576, V its "
      "first 512); scale 192^-1/2 mscale^2, mscale = 0.1 ln 40 + 1" },
    { "phi-3-mini", 32, 32, 96, 96, 0, true, { 0 },
      "microsoft/Phi-3-mini-128k-instruct config.json: 32 heads, 32 KV heads, hidden 3072 "
      "(its sliding_window 262144 is past every context here)" },
    { "falcon-7b", 71, 1, 64, 64, 0, true, { 0 },
      "tiiuae/falcon-7b config.json: 71 heads, multi_query (1 KV head), hidden 4544" },
    { "bloom-7b1", 32, 32, 128, 128, 0, true, { .alibi = true },
      "bigscience/bloom-7b1 config.json: 32 heads, hidden 4096, ALiBi positions" },
    { "bert-base", 12, 12, 64, 64, 0, false, { 0 },
      "google-bert/bert-base-uncased config.json: 12 heads, hidden 768, an encoder "
      "(not causal)" },
    { "vit-b-16", 12, 12, 64, 64, 0, false, { 0 },
      "google/vit-base-patch16-224 config.json: 12 heads, hidden 768, an encoder (not "
      "causal; 197 tokens at 224 px)" },
};

size_t attn_model_count(void)
{
    return sizeof(models) / sizeof(models[0]);
}

const attn_model *attn_model_get(size_t i)
{
    return i < attn_model_count() ? &models[i] : NULL;
}

const attn_model *attn_model_find(const char *name)
{
    for (size_t i = 0; i < attn_model_count(); i++)
        if (!strcasecmp(models[i].name, name))
            return &models[i];
    return NULL;
}

float attn_model_scale(const attn_model *m)
{
    if (!strcmp(m->name, "deepseek-v3-decode"))
        return (float)DEEPSEEK_V3_SCALE;
    return m->scale > 0 ? (float)m->scale : (float)(1.0 / sqrt((double)m->d_k));
}

void attn_models_print(FILE *f)
{
    fprintf(f, "%-20s %5s %5s %5s %5s %-9s %-6s %s\n", "model", "H", "Hkv", "dk", "dv",
            "scale", "causal", "modifiers");
    for (size_t i = 0; i < attn_model_count(); i++) {
        const attn_model *m = &models[i];
        char mods[96] = "";
        size_t at = 0;
        if (m->mods.window)
            at += (size_t)snprintf(mods + at, sizeof(mods) - at, "window %d,%d ", m->mods.left,
                                   m->mods.right);
        if (m->mods.softcap > 0)
            at += (size_t)snprintf(mods + at, sizeof(mods) - at, "softcap %g ",
                                   (double)m->mods.softcap);
        if (m->mods.alibi)
            at += (size_t)snprintf(mods + at, sizeof(mods) - at, "alibi ");
        if (m->mods.sinks)
            at += (size_t)snprintf(mods + at, sizeof(mods) - at, "sinks ");
        if (m->mods.v_from_k)
            snprintf(mods + at, sizeof(mods) - at, "v-from-k ");
        fprintf(f, "%-20s %5d %5d %5d %5d %-9.6g %-6s %s\n", m->name, m->heads, m->kv_heads,
                m->d_k, m->d_v, (double)attn_model_scale(m), m->causal ? "yes" : "no",
                mods[0] ? mods : "-");
        fprintf(f, "%-20s   source: %s\n", "", m->source);
    }
    fputs("--seq, --seq-kv, --batch and --dtype choose the workload; an explicit option\n"
          "(--heads, --kv-heads, --dk, --dv, --scale, --causal, a modifier) overrides the\n"
          "preset's value.\n", f);
}

int attn_parse_window(const char *val, int max, attn_mods *m)
{
    long v[2] = { -1, -1 };
    int n = 0;
    const char *at = val;
    bool ok = true;
    for (;;) {
        char *end;
        if (*at < '0' || *at > '9' || n == 2) {
            ok = false;
            break;
        }
        v[n++] = strtol(at, &end, 10);
        ok = v[n - 1] <= max;
        at = end;
        if (!ok || *at != ',')
            break;
        at++;
    }
    if (!ok || *at)
        return attn_error(ATTN_EXIT_USAGE, "--window: '%s' is not L or L,R with each an "
                          "integer in [0, %d] (keys i'-L..i'+R are visible)", val, max);
    m->window = true;
    m->left = (int)v[0];
    m->right = (int)(n > 1 ? v[1] : v[0]);
    return -1;
}
