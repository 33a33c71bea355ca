"""Multi-turn rollouts against a toy environment and per-turn credit wiring."""
import pytest
import torch

from visalign.core import TrainContext
from visalign.core.types import PromptBatch
from visalign.text import (
    StepResult,
    TextEnvironment,
    TextMultiTurn,
    TextMultiTurnConfig,
    Trajectory,
    Turn,
    combine_credit,
    graph_credit,
    grpo_advantages,
    multiturn_rollout,
    progress_credit,
    turn_batch,
)


class GuessEnv(TextEnvironment):
    """Guess the answer; each wrong guess answers '+' and the episode ends on a right guess."""

    def step(self, history, metadata):
        ok = history[-1].strip() == metadata["answer"]
        turn = len(history) // 2
        return StepResult("" if ok else "+", float(ok), ok, progress=float(ok), state=("turn", turn, ok))


BATCH = PromptBatch(["1+2=", "3+4="], [{"answer": "3"}, {"answer": "7"}])


def test_rollout_structure_and_contexts(gpt2_policy):
    trajs = multiturn_rollout(gpt2_policy, GuessEnv(), BATCH.prompts, BATCH.metadata, torch.Generator().manual_seed(0),
                              group_size=3, max_turns=3)
    again = multiturn_rollout(gpt2_policy, GuessEnv(), BATCH.prompts, BATCH.metadata, torch.Generator().manual_seed(0),
                              group_size=3, max_turns=3)
    assert [t.states for t in trajs] == [t.states for t in again]
    assert len(trajs) == 6 and all(1 <= len(t.turns) <= 3 for t in trajs)
    t = trajs[0]
    assert t.turns[0].context == "1+2=" and t.turns[0].state == "1+2="
    if len(t.turns) > 1:
        assert t.turns[1].context == "1+2=" + t.turns[0].action + "+"
    s, index = turn_batch(gpt2_policy, trajs)
    assert len(index) == sum(len(t.turns) for t in trajs)
    assert gpt2_policy.decode(s.completion_ids, s.completion_mask) == [trajs[k].turns[i].action for k, i in index]


def _fake(states, rewards, progress):
    t = Trajectory("p", {})
    for s, r, p in zip(states, rewards, progress):
        t.turns.append(Turn("", "", s, StepResult(reward=r, progress=p), []))
    return t


def test_turn_advantages_graph_and_progress():
    trajs = [_fake(["s0", "s1"], [0, 1], [0.5, 1.0]), _fake(["s0", "s1"], [0, 0], [0.5, 0.5]),
             _fake(["s0", "s2"], [0, 1], [0.0, 1.0]), _fake(["s0"], [0], [0.0])]
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0])
    group = grpo_advantages(rewards.view(1, 4)).view(-1).tolist()
    algo = TextMultiTurn(TextMultiTurnConfig(group_size=4, credit="graph", w_step=0.5), env=GuessEnv())
    got = algo.turn_advantages(trajs, rewards)
    step = graph_credit([t.states for t in trajs], [True, False, True, False]).step_advantages
    assert got == combine_credit(group, step, 1.0, 0.5)
    algo.config.credit = "progress"
    got = algo.turn_advantages(trajs, rewards)
    # progress credits (w_step = 0.5): [0.5, 0.5] and [0.5, 0.0]
    assert got[0] == pytest.approx([group[0] + 0.25, group[0] + 0.25]) and got[1] == pytest.approx([group[1] + 0.25, group[1]])
    assert progress_credit(trajs[2].progress) == [0.0, 1.0]


def test_multiturn_algorithm_loss_has_gradient(gpt2_policy):
    algo = TextMultiTurn(TextMultiTurnConfig(group_size=3, max_turns=2), env=GuessEnv())
    ctx = TrainContext(gpt2_policy, None, None, torch.device("cpu"))
    r = algo.rollout(ctx, BATCH, torch.Generator().manual_seed(0))
    assert r.rewards.shape == (6,) and r.extras["advantages"].shape[0] == r.extras["text"].completion_ids.shape[0]
    loss, m = algo.loss(ctx, r)
    assert torch.isfinite(loss) and m["turns_mean"] >= 1
    result = algo.evaluate(ctx, BATCH, torch.Generator().manual_seed(0))
    metrics = {"eval/reward_mean": float(result.rewards.mean()), **result.metrics}
    assert 0.0 <= metrics["eval/success"] <= 1.0


ENV_FILE = '''
from visalign.text import StepResult, TextEnvironment


class Echo(TextEnvironment):
    def __init__(self, reward=1.0):
        self.reward = reward

    def step(self, history, metadata):
        return StepResult("", self.reward, True)


class NotAnEnv:
    def step(self, history, metadata):
        return None
'''


def test_load_environment_builds_the_named_class_from_a_file_with_its_kwargs(tmp_path):
    from visalign.text import load_environment

    path = tmp_path / "envs.py"
    path.write_text(ENV_FILE)
    env = load_environment(f"{path}:Echo", reward=0.25)
    assert type(env).__name__ == "Echo" and env.step(["hi"], {}).reward == 0.25
    assert env.initial_state("p", {}) == "p" and env.initial_progress("p", {}) == 0.0
    algo = TextMultiTurn(TextMultiTurnConfig(env=f"{path}:Echo", env_kwargs={"reward": 0.5}))
    algo.setup(None)
    assert algo.env.step(["hi"], {}).reward == 0.5


def test_load_environment_names_what_is_wrong_with_the_spec(tmp_path):
    from visalign.text import load_environment

    path = tmp_path / "envs.py"
    path.write_text(ENV_FILE)
    with pytest.raises(ValueError, match="must look like 'file.py:Class'"):
        load_environment(str(path))
    with pytest.raises(FileNotFoundError, match="missing.py"):
        load_environment(f"{tmp_path / 'missing.py'}:Echo")
    with pytest.raises(AttributeError, match="has no attribute 'Ecko'"):
        load_environment(f"{path}:Ecko")
    with pytest.raises(TypeError, match="built a NotAnEnv, not a TextEnvironment"):
        load_environment(f"{path}:NotAnEnv")
    with pytest.raises(ValueError, match="needs algorithm.env"):
        TextMultiTurn(TextMultiTurnConfig()).setup(None)
