"""Core protocols: generators, rewards, algorithms, configs."""
from .algorithm import ALGORITHMS, Algorithm, TrainContext, build_algorithm, register_algorithm
from .config import ConfigError, apply_overrides, from_dict, load_yaml
from .generator import GENERATORS, Generator, build_generator, load_generator, register_generator
from .reward import REWARDS, FunctionReward, Reward, WeightedReward, build_reward, get_reward, register_reward, score
from .prompts import PROMPT_SOURCES, PromptList, PromptSource, Unconditional, build_prompt_source, register_prompt_source
from .types import PromptBatch, Rollout, Samples

__all__ = [
    "ALGORITHMS", "Algorithm", "TrainContext", "build_algorithm", "register_algorithm",
    "ConfigError", "apply_overrides", "from_dict", "load_yaml",
    "GENERATORS", "Generator", "build_generator", "load_generator", "register_generator",
    "REWARDS", "FunctionReward", "Reward", "WeightedReward", "build_reward", "get_reward", "register_reward", "score",
    "PromptBatch", "Rollout", "Samples", "PromptList", "PromptSource", "Unconditional", "PROMPT_SOURCES", "build_prompt_source", "register_prompt_source",
]
