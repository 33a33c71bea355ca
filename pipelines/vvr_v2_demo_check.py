"""Can the shipped 32 px VVR generators (pretrained on v1 renders) be scored under closed-world v2?

Each of the demo's v1 tasks (``tasks_fit.jsonl``: the 16 the demo trains on; ``tasks_eval.jsonl``: held out) is
turned into a closed-world v2 spec of its own witness scene (every object group with its exact count, on white,
plus the v1 constraint where the format has the type) with a whole-scene v2 prompt. Printed, strict accuracy of:
1. the v2 verifier on 32 px renders of those scenes (is 32 px readable at all?),
2. the shipped one-step model prompted with the *v1* prompt, read closed-world (do its v1 answers draw the scene?),
3. the shipped one-step model prompted with the *v2* prompt (what moving the demo to v2 task files would start from),
next to the v1 accuracy of the same outputs (2).

    python pipelines/vvr_v2_demo_check.py [--draws 32] [--eval-n 192]
"""
from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

import torch

from visalign.core import load_generator
from visalign.core.prompts import _read_prompt_file
from visalign.rewards.vvr import VVRReward
from visalign.vvr.render import render_task, to_tensor
from visalign.vvr.spec import PAPER_VERSION, parse_spec
from visalign.vvr.spec_prompts import write_spec_prompt
from visalign.vvr.spec_task import SpecTask
from visalign.vvr.task import Task

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets" / "tiny_one_step_vvr"
RELATION = {"left_of": "left_of", "right_of": "right_of", "above": "above", "below": "below", "larger": "larger_than",
            "smaller": "smaller_than", "same_size": "same_size", "touching": "touching", "separated": "not_touching",
            "inside": "inside"}


def to_v2(task: Task) -> SpecTask:
    """The closed-world v2 task of a v1 task's witness scene (groups with exact counts, white background)."""
    counts = Counter((o.color, o.shape) for o in task.scene.objects)
    groups = [{"id": f"{c}_{s}", "color": c, "shape": s, "count": n} for (c, s), n in sorted(counts.items())]
    relations = []
    for c in task.constraints:
        t = RELATION.get(c.type)
        a, b = c.args.get("a"), c.args.get("b")
        if t and isinstance(a, dict) and isinstance(b, dict) and "color" in a and "shape" in a and "color" in b \
                and "shape" in b and counts[(a["color"], a["shape"])] == 1 and counts[(b["color"], b["shape"])] == 1:
            relations.append({"type": t, "subject": f"{a['color']}_{a['shape']}", "object": f"{b['color']}_{b['shape']}"})
    spec = parse_spec({"verifier_version": PAPER_VERSION, "background": {"color": "white"}, "objects": groups,
                       "relations": relations})
    prompt = write_spec_prompt(spec, random.Random(0))
    return SpecTask(task.id, prompt, spec, spec.criteria(), 1, None, task.primary)


def scores(images: torch.Tensor, v1_tasks: list[Task], v2_tasks: list[SpecTask], prompts: list[str]) -> dict[str, float]:
    strict2 = VVRReward(strict=True)(images, prompts, [{"task": t.to_row()} for t in v2_tasks])
    strict1 = VVRReward(strict=True)(images, prompts, [{"task": t.to_dict()} for t in v1_tasks])
    return {"v2_strict": round(strict2.mean().item(), 4), "v1_all_satisfied": round(strict1.mean().item(), 4),
            "n": len(v1_tasks)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--draws", type=int, default=32, help="noise draws per fit task")
    p.add_argument("--eval-n", type=int, default=192, help="held-out tasks")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    gen = load_generator(ASSETS).eval()
    out: dict[str, dict[str, float]] = {}
    for name, file, reps, limit in (("fit", "tasks_fit.jsonl", args.draws, None), ("held_out", "tasks_eval.jsonl", 1, args.eval_n)):
        _, meta = _read_prompt_file(str(ASSETS / file))
        v1 = [Task.from_dict(m["task"]) for m in meta][:limit]
        v2 = [to_v2(t) for t in v1]
        v1r, v2r = [t for t in v1 for _ in range(reps)], [t for t in v2 for _ in range(reps)]
        renders = to_tensor([render_task(t, 32, seed=i) for i, t in enumerate(v1)])
        out[f"{name}/renders_32px"] = scores(renders, v1, v2, [t.prompt for t in v2])
        with torch.no_grad():
            g = torch.Generator().manual_seed(1)
            x1 = gen.sample(len(v1r), [t.prompt for t in v1r], generator=g)
            g = torch.Generator().manual_seed(1)
            x2 = gen.sample(len(v2r), [t.prompt for t in v2r], generator=g)
        out[f"{name}/one_step_v1_prompt"] = scores(x1, v1r, v2r, [t.prompt for t in v1r])
        out[f"{name}/one_step_v2_prompt"] = scores(x2, v1r, v2r, [t.prompt for t in v2r])
    print(json.dumps(out, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
