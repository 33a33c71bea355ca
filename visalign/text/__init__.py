"""Text side: causal-LM policies, verifiable text rewards, group advantages (GRPO, Dr.GRPO, RLOO, MaPP), PPO / KL /
distillation losses, step-level credit (graph, progress), multi-reward reconciliation (ORPG) and the text
algorithms ``text_grpo``, ``text_distill``, ``text_multi_reward`` and ``text_multiturn`` on the shared trainer."""
from .advantages import (
    ESTIMATORS,
    BetaPosteriorTable,
    beta_binomial_pmf,
    dr_grpo_advantages,
    group_rewards,
    grpo_advantages,
    mapp_advantages,
    mapp_selection_score,
    mapp_success_advantage,
    rloo_advantages,
)
from .algorithms import (
    TextDistill,
    TextDistillConfig,
    TextGRPO,
    TextGRPOConfig,
    TextMultiReward,
    TextMultiRewardConfig,
    TextMultiTurn,
    TextMultiTurnConfig,
)
from .credit import GraphCredit, combine_credit, graph_credit, progress_credit
from .losses import aggregate, distillation_loss, forward_kl, grad_norm, hybrid_loss, kl_penalty, ppo_clip_loss, reverse_kl
from .models import tiny_causal_lm
from .multiturn import StepResult, TextEnvironment, Trajectory, Turn, load_environment, multiturn_rollout, turn_batch
from .policy import CausalLMPolicy, TextSamples
from .reconcile import cosine_matrix, orpg_blend, pcgrad, priority_projection, reconcile, weighted_sum
from .selection import PosteriorPromptSource
from .rewards import CharFractionReward, ExactMatchReward, FormatReward, LengthReward, extract_answer
from .tasks import ADDITION_CHARS, AdditionTask
from .tokenizer import char_tokenizer

__all__ = [
    "ESTIMATORS", "BetaPosteriorTable", "beta_binomial_pmf", "dr_grpo_advantages", "group_rewards", "grpo_advantages",
    "mapp_advantages", "mapp_selection_score", "mapp_success_advantage", "rloo_advantages",
    "TextDistill", "TextDistillConfig", "TextGRPO", "TextGRPOConfig", "TextMultiReward", "TextMultiRewardConfig",
    "TextMultiTurn", "TextMultiTurnConfig", "StepResult", "TextEnvironment", "Trajectory", "Turn", "load_environment",
    "multiturn_rollout", "turn_batch",
    "GraphCredit", "combine_credit", "graph_credit", "progress_credit",
    "aggregate", "distillation_loss", "forward_kl", "grad_norm", "hybrid_loss", "kl_penalty", "ppo_clip_loss", "reverse_kl",
    "tiny_causal_lm", "CausalLMPolicy", "TextSamples",
    "cosine_matrix", "orpg_blend", "pcgrad", "priority_projection", "reconcile", "weighted_sum",
    "CharFractionReward", "ExactMatchReward", "FormatReward", "LengthReward", "extract_answer",
    "PosteriorPromptSource", "ADDITION_CHARS", "AdditionTask", "char_tokenizer",
]
