"""The documentation's front door and its links: README.md stays one or two
screens (at most 250 lines), and every relative link in README.md, docs/ and
the results READMEs resolves — the file exists and, for a link with #anchor
into Markdown, that heading is there (GitHub's slugs). The checker is shown to
reject a planted broken file link and a planted broken anchor."""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import done, diag, ok  # noqa: E402

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped,
    spaces to dashes."""
    t = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return t.replace(" ", "-")


def anchors(path):
    out, seen, fenced = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if FENCE.match(line):
            fenced = not fenced
        m = None if fenced else re.match(r"#{1,6} (.*)", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(path):
    fenced = False
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        if FENCE.match(line):
            fenced = not fenced
        if fenced or line.startswith("    "):
            continue
        for m in LINK.finditer(line):
            yield no, m.group(1)


def broken(path):
    """Every relative link of path that does not resolve, as 'line: target (why)'."""
    bad = []
    for no, target in links(path):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        if not os.path.exists(dest):
            bad.append(f"{path}:{no}: {target} (no such file)")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            bad.append(f"{path}:{no}: {target} (no heading #{anchor} in {dest})")
    return bad


def main():
    top = sys.argv[1]
    readme = os.path.join(top, "README.md")
    lines = sum(1 for _ in open(readme, encoding="utf-8"))
    ok(lines <= 250, f"README.md is {lines} lines (at most 250; the manual lives in docs/)")
    docs = sorted(os.path.normpath(os.path.join(top, "docs", f)) for f in os.listdir(os.path.join(top, "docs"))
                  if f.endswith(".md"))
    linked = {os.path.normpath(os.path.join(top, t.partition("#")[0])) for _, t in links(readme)}
    missing = [d for d in docs if d not in linked]
    ok(docs and not missing, f"README.md links every file of docs/ ({len(docs)} files)")
    if missing:
        diag("not linked: " + ", ".join(missing))
    results = sorted(os.path.join(top, "results", d, "README.md")
                     for d in os.listdir(os.path.join(top, "results"))
                     if os.path.exists(os.path.join(top, "results", d, "README.md")))
    for path in [readme] + docs + [os.path.join(top, "results", "README.md")] + results:
        bad = broken(path)
        n = sum(1 for _ in links(path))
        ok(not bad, f"{os.path.relpath(path, top)}: its {n} links resolve")
        for b in bad:
            diag(b)

    # The checker itself: a planted broken link and a planted broken anchor.
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "a.md"), "w") as f:
            f.write("# A title\n\n## Second part\n\n[fine](#second-part) [also](a.md#a-title)\n"
                    "[gone](nosuch.md) [bad anchor](a.md#third-part)\n"
                    "    [in a code block](ignored.md)\n")
        bad = broken(os.path.join(d, "a.md"))
        ok(len(bad) == 2 and "nosuch.md (no such file)" in bad[0] and "#third-part" in bad[1],
           f"planted: a link to a missing file and one to a missing heading are reported ({bad})")
    done()


if __name__ == "__main__":
    main()
