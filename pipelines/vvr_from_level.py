"""Where does a VVR flow base fail: starting a scene, or drawing it? Renders noised to a level and finished by the flow.

For each flow checkpoint, held-out tasks are rendered at the flow's size, noised to each ``--levels`` value s and
integrated back to 0 in 8 Euler steps (:func:`visalign.core.flow.sample_from_level`; s = 1 is a free sample). The
strict (all-satisfied) rate and soft reward of the results, with binomial / plain standard errors over the tasks. A
base that only fails to *commit* to a scene finishes renders from middle levels nearly as well as the renders score;
one whose denoiser cannot draw the objects loses them even from low levels.

    python pipelines/vvr_from_level.py --checkpoints v2=assets/tiny_flow_vvr2 --version 2
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from visalign.core.flow import sample_from_level
from visalign.core.generator import load_generator
from visalign.results import ResultRow, Tolerance, write_results
from visalign.rewards.vvr import vvr_scores
from visalign.vvr.render import to_tensor

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from pipelines.checkpoint_args import parse_checkpoints  # noqa: E402
from pipelines.vvr_pretrain import MAX_COMPLEXITY, easy_tasks, easy_tasks_v2, render  # noqa: E402


def scores(images: torch.Tensor, prompts: list[str], metadata: list[dict]) -> tuple[dict[str, float], dict[str, float]]:
    """Means and standard errors of the strict and soft VVR rewards of ``images``."""
    scored = vvr_scores(images, prompts, metadata)
    values = {"all_satisfied": scored["strict"].float(), "soft_reward": scored["soft"].float()}
    return ({k: round(float(v.mean()), 4) for k, v in values.items()},
            {k: round(float(v.std() / len(v) ** 0.5), 4) for k, v in values.items()})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", nargs="+", required=True, help="name=path of tiny_flow VVR checkpoints")
    p.add_argument("--version", type=int, choices=(1, 2), default=2, help="held-out easy tasks of VVR v1 or v2")
    p.add_argument("--levels", type=float, nargs="+", default=[1.0, 0.9, 0.75, 0.5, 0.25])
    p.add_argument("--eval-n", type=int, default=192, help="held-out tasks")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default=None, help="also write the result file (visalign.results format) here")
    args = p.parse_args(argv)
    if any(not 0 < level <= 1 for level in args.levels):
        p.error(f"--levels must lie in (0, 1], got {args.levels}")
    named = parse_checkpoints(args.checkpoints)
    began = time.perf_counter()
    torch.set_num_threads(args.threads)
    tasks = easy_tasks_v2(args.eval_n, None, MAX_COMPLEXITY) if args.version == 2 else easy_tasks(args.eval_n, None)
    rows, renders_by_size = [], {}
    for name, path in named.items():
        flow = load_generator(path).eval()
        size = flow.config.image_size
        if size not in renders_by_size:  # one set of renders (and its row) per image size
            renders_by_size[size] = to_tensor([render(m, size, i) for i, m in enumerate(tasks.metadata)])
            values, se = scores(renders_by_size[size], tasks.prompts, tasks.metadata)
            rows.append(ResultRow(f"renders_{size}px", values, se=se))
        renders = renders_by_size[size]
        noise = torch.randn(renders.shape, generator=torch.Generator().manual_seed(args.seed))
        cond = flow.encode(tasks.prompts)
        for level in args.levels:
            finished = flow.decode(sample_from_level(flow, renders, level, noise, cond)).clamp(-1, 1)
            values, se = scores(finished, tasks.prompts, tasks.metadata)
            rows.append(ResultRow(f"{name}/from_{level:g}", values, se=se))
            print(f"{name} from {level:g}: all-satisfied {values['all_satisfied']:.3f} (±{se['all_satisfied']:.3f}), "
                  f"soft {values['soft_reward']:.3f}", flush=True)
    if args.results:
        write_results(args.results, "vvr_from_level", "python pipelines/vvr_from_level.py",
                      sys.argv[1:] if argv is None else argv, rows,
                      tolerance=Tolerance(note="saved checkpoints, fixed renders and noise: compared exactly"),
                      platform_tolerance=Tolerance(se_multiple=2.0),
                      note=f"{args.eval_n} held-out easy v{args.version} tasks: renders noised to each level and "
                           "finished in 8 Euler steps",
                      runtime_s=time.perf_counter() - began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
