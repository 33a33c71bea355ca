"""``python -m visalign.vvr.make_bench --out DIR``: write bench.jsonl and challenge.jsonl deterministically."""
from .benchmark import main

if __name__ == "__main__":
    raise SystemExit(main())
