"""Pretrain the toy reference generators shipped in ``assets/toy/`` (8-mode ring, radius 2, std 0.2).

    python pipelines/toy_references.py                 # writes assets/toy/one_step_ring and assets/toy/flow_ring (~2 min, 1 core)

one_step_ring: ``toy_one_step`` MLP (64 wide, 3 layers) fitted by transport regression (exact OT, 1000 steps).
flow_ring:     ``toy_flow`` MLP velocity (64 wide, 3 layers, 4 Euler steps) fitted by flow matching (2000 steps).
Both are safetensors checkpoints of ~35 KB loadable with ``load_generator`` or ``generator: {checkpoint: ...}``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from visalign.generators import ToyFlowGenerator, ToyOneStepGenerator
from visalign.generators.toy import ToyConfig
from visalign.toys import mmd_rbf, ring_mixture
from visalign.toys.pretrain import pretrain_flow, pretrain_one_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="assets/toy")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    mix = ring_mixture(num_modes=8, radius=2.0, std=0.2)
    data = mix.sample(2000, torch.Generator().manual_seed(123))

    torch.manual_seed(args.seed)
    one = ToyOneStepGenerator(ToyConfig(hidden=args.hidden, layers=3))
    pretrain_one_step(one, mix.sample, steps=1000, batch_size=256, lr=3e-3, seed=args.seed)
    torch.manual_seed(args.seed)
    flow = ToyFlowGenerator(ToyConfig(hidden=args.hidden, layers=3, num_steps=4))
    pretrain_flow(flow, mix.sample, steps=2000, batch_size=256, lr=3e-3, seed=args.seed)
    for name, gen in (("one_step_ring", one), ("flow_ring", flow)):
        gen.eval().save_pretrained(out / name)
        with torch.no_grad():
            x = gen.sample(n=2000, generator=torch.Generator().manual_seed(7))
        print(f"{name}: MMD to the ring {mmd_rbf(x, data):.4f} -> {out / name}")


if __name__ == "__main__":
    main()
