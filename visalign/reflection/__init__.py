"""Reflection loops (UMM-Reflection): generate → critique → revise, trained with one trajectory-level advantage."""
from ..core.reflection import (Controller, ControllerTurns, EditConditioner, ReflectionPair, ReflectionPolicy, Turn,
                               format_turn, parse_turn)
from .algorithm import Reflection, ReflectionConfig, bounded_k3
from .counting import DotCountReward, TeacherConfig, count_dots, graded_quality, prompt_for
from .critique import binarised, editor_probe, instruction_metrics
from .evaluation import best_of_n, reflection_metrics
from .reward import TrajectoryRewardConfig, group_advantages, trajectory_rewards
from .rollout import Trajectories, run_trajectories
from .text_controller import CausalLMController
from .tiny import TinyReflectionConfig, TinyReflectionModel

__all__ = [
    "Controller", "ControllerTurns", "EditConditioner", "ReflectionPair", "ReflectionPolicy", "Turn", "format_turn",
    "parse_turn", "Reflection", "ReflectionConfig", "bounded_k3", "DotCountReward", "TeacherConfig", "count_dots",
    "graded_quality", "prompt_for", "binarised", "editor_probe", "instruction_metrics", "best_of_n", "reflection_metrics", "TrajectoryRewardConfig", "group_advantages",
    "trajectory_rewards", "Trajectories", "run_trajectories", "CausalLMController", "TinyReflectionConfig", "TinyReflectionModel",
]
