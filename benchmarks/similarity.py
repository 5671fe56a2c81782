"""How well the similarity report (grading/instructor/similarity.py) finds planted copies, per lab
and kind of disguise, and how long it takes for a class of 300.

    python -m benchmarks.similarity [--labs LM10-L1 LM10-L2 LM10-L6] [--dolos DIR]

For each lab, a synthetic class (tests/lab_cases/copying.py): 25 honest students whose answers
were written independently (five methods per part, no two honest students sharing the method
of more than one part, each in their own style), and two planted copies of each kind of
disguise, each of another honest student (a copy of a copy: three students in a chain). Every
submission is a notebook in a course copy's grading/submitted/, read as `make similarity` reads
it. Printed per lab and kind: the planted pairs found at the report's threshold (recall), the
lowest score of a planted pair, and the number of honest pairs (any two students who did not
copy from each other or from the same original) that score at least as high as that lowest
planted pair; the same for copydetect's own unweighted share (what the rarity weights add) and,
with --dolos DIR (a folder where `npm install @dodona/dolos-lib` ran), for Dolos's similarity
on the same extracted answer code (the release's answer cells as its template, fingerprints in
more than half the files left out). Then the time for a class of 300 (the 41 students of each
class and copies of them with other names and layout, so that rarity is computed over 300).
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from lab_cases import copying  # noqa: E402

from grading.instructor import similarity  # noqa: E402

DOLOS_SCRIPT = """
import { Dolos } from "@dodona/dolos-lib";
const [ignore, ...files] = process.argv.slice(2);
// the release's answer cells as its template, and what half the class writes left out, as
// grading/instructor/similarity.py does with copydetect
const dolos = new Dolos({ language: "python", maxFingerprintPercentage: 0.5 });
const report = await dolos.analyzePaths(files, ignore);
const out = [];
for (const p of report.allPairs())
  out.push([p.leftFile.path, p.rightFile.path, p.similarity]);
console.log(JSON.stringify(out));
"""


def write_class(root, lab, students):
    """A course copy in `root` holding the release of `lab` and every student's notebook."""
    grading = root / "grading"
    (root / "labs" / lab).mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "labs" / lab / f"{lab}.ipynb", root / "labs" / lab / f"{lab}.ipynb")
    released = copying.release(lab)
    for student, answers in students.items():
        folder = grading / "submitted" / student / lab
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(copying.notebook(lab, answers, released), folder / f"{lab}.ipynb")
    return grading


def dolos_scores(dolos_dir, texts, starter, scratch):
    folder = scratch / "dolos"
    folder.mkdir()
    template = scratch / "release.py"
    template.write_text(starter[1])  # the release's answer cells, joined as a submission's
    paths = {}
    for student, text in texts.items():
        path = folder / f"{student}.py"
        path.write_text(text)
        paths[str(path)] = student
    script = Path(dolos_dir) / "similarity-benchmark.mjs"
    script.write_text(DOLOS_SCRIPT)
    done = subprocess.run(
        ["node", str(script), str(template), *paths],
        cwd=dolos_dir,
        capture_output=True,
        text=True,
        check=True,
    )
    return {frozenset((paths[a], paths[b])): float(s) for a, b, s in json.loads(done.stdout)}


def judge(scores, planted, family, students):
    """Per kind: (found at threshold or None, planted pairs, lowest planted score, honest
    pairs at least as high)."""
    names = sorted(students)
    honest = [
        scores.get(frozenset((a, b)), 0.0)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if family.get(a, a) != family.get(b, b)
    ]
    rows = {}
    kinds = list(dict.fromkeys(kind for _, _, kind in planted)) + ["every kind"]
    for kind in kinds:
        mine = [
            scores.get(frozenset((a, b)), 0.0) for a, b, k in planted if kind in (k, "every kind")
        ]
        lowest = min(mine)
        above = sum(h >= lowest for h in honest)
        rows[kind] = (mine, lowest, above, max(honest))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labs", nargs="+", default=list(copying.LABS))
    parser.add_argument("--dolos", type=Path, help="a folder with @dodona/dolos-lib installed")
    parser.add_argument("--big", type=int, default=300, help="class size for the timing")
    args = parser.parse_args(argv)
    threshold = similarity.THRESHOLD
    print(f"threshold {threshold}; honest pairs: students who did not copy from each other")
    header = (
        f"{'lab':8} {'disguise':26} {'found':>7} {'lowest':>7} {'honest>=':>8}"
        f" | {'plain: lowest':>13} {'honest>=':>8}"
    )
    if args.dolos:
        header += f" | {'dolos: lowest':>13} {'honest>=':>8}"
    print(header)
    for lab in args.labs:
        students, planted, family = copying.build(lab)
        with tempfile.TemporaryDirectory() as scratch:
            scratch = Path(scratch)
            grading = write_class(scratch, lab, students)
            start = time.monotonic()
            _, pairs, problems = similarity.build(lab, grading, out=scratch / "reports")
            seconds = time.monotonic() - start
            assert not problems, problems
            weighted = {frozenset((p.a, p.b)): p.score for p in pairs}
            plain = {frozenset((p.a, p.b)): p.plain_share for p in pairs}
            ours = judge(weighted, planted, family, students)
            theirs = judge(plain, planted, family, students)
            if args.dolos:
                starter, texts, _ = similarity.read_class(lab, grading)
                found = dolos_scores(args.dolos, texts, starter, scratch)
                dolos = judge(found, planted, family, students)
        for kind, (mine, lowest, above, _) in ours.items():
            found = sum(s >= threshold for s in mine)
            line = (
                f"{lab:8} {kind:26} {found:>3}/{len(mine):<3} {lowest:>7.2f} {above:>8}"
                f" | {theirs[kind][1]:>13.2f} {theirs[kind][2]:>8}"
            )
            if args.dolos:
                line += f" | {dolos[kind][1]:>13.2f} {dolos[kind][2]:>8}"
            print(line)
        honest = sum(1 for s in students if s.startswith("honest"))
        print(
            f"{lab:8} {len(students)} students ({honest} honest), highest honest pair "
            f"{ours['every kind'][3]:.2f} (plain {theirs['every kind'][3]:.2f}), "
            f"report built in {seconds:.1f} s"
        )
    lab = args.labs[-1]
    big = {}
    students, _, _ = copying.build(lab)
    names = list(students)
    for i in range(args.big):
        source = students[names[i % len(names)]]
        variant = i // len(names)
        if variant:
            source = copying.renamed(source, lab, lambda n, k, v=variant: f"{n}_{v}")
            if variant % 2:
                source = copying.reformatted(source)
        big[f"student-{i:03d}"] = source
    with tempfile.TemporaryDirectory() as scratch:
        grading = write_class(Path(scratch), lab, big)
        start = time.monotonic()
        _, pairs, _ = similarity.build(lab, grading, out=Path(scratch) / "reports")
        seconds = time.monotonic() - start
    print(f"{lab}: {len(big)} submissions ({len(pairs)} pairs above zero) in {seconds:.1f} s")


if __name__ == "__main__":
    main()
