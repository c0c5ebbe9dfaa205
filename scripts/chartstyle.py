"""One look for every chart of the project: each backend, peer and model has
one fixed colour and marker in every chart; exact implementations are drawn
solid, the variants (another function than softmax attention) dashed, the
peers (implementations outside attnbench) dotted; legends sit outside the
axes. And the charts' output folder, made and tried before any drawing."""
import os
import sys

# name: (colour, marker). Neighbours in a chart are kept apart in hue.
STYLE = {
    # exact backends
    "naive": ("#7f7f7f", "o"),
    "tiled": ("#d62728", "s"),
    "blas": ("#1f77b4", "^"),
    "onednn": ("#2ca02c", "v"),
    "vulkan": ("#9467bd", "D"),
    "vulkan-3pass": ("#e377c2", "P"),
    "ring": ("#8c564b", "X"),
    # the variants
    "local": ("#17becf", "<"),
    "sparse": ("#bcbd22", ">"),
    "linear": ("#ff7f0e", "h"),
    "performer": ("#000000", "*"),
    "linformer": ("#a6761d", "p"),
    # peers
    "torch-sdpa": ("#000080", "d"),
    "torch-math": ("#66c2a5", "8"),
    "numpy": ("#e6ab02", "H"),
    # attnbench arch's models
    "rnn": ("#1f77b4", "o"),
    "cnn": ("#2ca02c", "s"),
    "attention": ("#d62728", "^"),
    "mha": ("#9467bd", "D"),
}
# attnbench --model's presets (results/models): a family shares a hue, its
# members tell apart by marker and, for a windowed layer, a dashed line.
MODELS = {
    "llama-3.1-8b": ("#1f77b4", "o"),
    "llama-3.1-70b": ("#1f77b4", "s"),
    "llama-3.2-1b": ("#1f77b4", "^"),
    "mistral-7b": ("#ff7f0e", "o"),
    "qwen2.5-7b": ("#2ca02c", "o"),
    "gemma-2-9b-local": ("#d62728", "v"),
    "gemma-2-9b-global": ("#d62728", "o"),
    "gpt-oss-20b-local": ("#9467bd", "v"),
    "gpt-oss-20b-global": ("#9467bd", "o"),
    "deepseek-v3-decode": ("#8c564b", "D"),
    "phi-3-mini": ("#e377c2", "o"),
    "falcon-7b": ("#7f7f7f", "o"),
    "bloom-7b1": ("#bcbd22", "o"),
    "bert-base": ("#17becf", "o"),
    "vit-b-16": ("#17becf", "s"),
}
WINDOWED = {"mistral-7b", "gemma-2-9b-local", "gpt-oss-20b-local"}
# K/V storage types (results/quant): the 16-bit ones in greys, the
# quantized ones each in a hue of its own.
KV_TYPES = {
    "fp32": ("#000000", "o"),
    "bf16": ("#7f7f7f", "^"),
    "fp16": ("#bbbbbb", "D"),
    "q8_0": ("#1f77b4", "s"),
    "q4_0": ("#d62728", "v"),
    "fp8e4m3": ("#2ca02c", "P"),
    "fp8e5m2": ("#ff7f0e", "X"),
}
VARIANTS = {"local", "sparse", "linear", "performer", "linformer"}
PEERS = {"torch-sdpa", "torch-math", "numpy"}


def color(name):
    return STYLE.get(name, ("#555555", "o"))[0]


def marker(name):
    return STYLE.get(name, ("#555555", "o"))[1]


def linestyle(name):
    return ":" if name in PEERS else "--" if name in VARIANTS else "-"


def kw(name, **more):
    """plot() keywords for name's line."""
    d = dict(color=color(name), marker=marker(name), linestyle=linestyle(name), markersize=5)
    d.update(more)
    return d


def model_kw(name, **more):
    """plot() keywords for preset name's line (MODELS)."""
    c, m = MODELS.get(name, ("#555555", "x"))
    d = dict(color=c, marker=m, linestyle="--" if name in WINDOWED else "-", markersize=5)
    d.update(more)
    return d


def kv_kw(name, **more):
    """plot() keywords for K/V storage type name's line (KV_TYPES)."""
    c, m = KV_TYPES.get(name, ("#555555", "x"))
    d = dict(color=c, marker=m, linestyle="-", markersize=5)
    d.update(more)
    return d


def storage_kw(series, base):
    """base's keywords for a series whose name may end in its storage types
    (plot.py's " bf16", " fp32 kv:fp16"): the backend's colour and line
    style, a marker of its own per 16-bit type (filled: all 16-bit;
    hollow: 16-bit K/V under fp32 Q), so that one backend's storage types
    tell apart on one panel."""
    d = dict(base)
    tag = series.split(" ", 1)[1] if " " in series else ""
    sixteen = "fp16" if "fp16" in tag else "bf16" if "bf16" in tag else None
    if sixteen:
        d["marker"] = "^" if sixteen == "bf16" else "D"
        d["linestyle"] = "-."
        if "kv:" in tag:
            d["markerfacecolor"] = "none"
    # The backward (plot.py's " bwd", " fwdbwd"): the backend's colour, a
    # line style and marker of its own per pass.
    words = tag.split()
    if "bwd" in words:
        d["linestyle"], d["marker"] = "--", "X"
    elif "fwdbwd" in words:
        d["linestyle"], d["marker"] = ":", "v"
    return d


def legend_outside(fig, axes, note=None, **kw_):
    """One legend for the whole figure, right of the axes: every label once
    (the colours are the same in every panel). note: extra handles, e.g. what
    the line styles mean. Returns the legend, to be kept by tight_layout's
    caller through bbox_extra_artists."""
    seen, handles, labels = set(), [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in seen:
                seen.add(lab)
                handles.append(h)
                labels.append(lab)
    for h, lab in note or []:
        handles.append(h)
        labels.append(lab)
    if not handles:
        return None
    return fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5),
                      fontsize=kw_.pop("fontsize", 8), frameon=False, **kw_)


def outdir(path, prog):
    """Makes the charts' folder and tries a file in it before anything is
    drawn: one line and exit 1 when it cannot be written."""
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, f".{prog}.probe.{os.getpid()}")
        with open(probe, "w"):
            pass
        os.unlink(probe)
    except OSError as e:
        print(f"{prog}: --out {path}: cannot be written: {e.strerror or e}", file=sys.stderr)
        sys.exit(1)


def save(fig, legend, d, name):
    """fig as d/name.png and .svg (the legend outside the axes kept in the
    frame), then closed; one line says so."""
    import matplotlib.pyplot as plt
    extra = [legend] if legend else []
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(d, f"{name}.{ext}"), dpi=130, bbox_inches="tight",
                    bbox_extra_artists=extra)
    plt.close(fig)
    print(f"wrote {os.path.join(d, name)}.png, .svg")
