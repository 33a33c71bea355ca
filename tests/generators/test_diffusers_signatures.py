"""Pins the diffusers names the tiny built-in generators rely on, so a diffusers upgrade fails here, loudly."""
import inspect

import pytest


@pytest.mark.parametrize("cls_name,init_kwargs,forward_kwargs", [
    ("SD3Transformer2DModel",
     {"sample_size", "patch_size", "in_channels", "out_channels", "num_layers", "attention_head_dim",
      "num_attention_heads", "joint_attention_dim", "caption_projection_dim", "pooled_projection_dim",
      "pos_embed_max_size"},
     {"hidden_states", "encoder_hidden_states", "pooled_projections", "timestep", "return_dict"}),
    ("UNet2DConditionModel",
     {"sample_size", "in_channels", "out_channels", "block_out_channels", "layers_per_block", "down_block_types",
      "up_block_types", "cross_attention_dim", "attention_head_dim", "norm_num_groups", "class_embed_type",
      "projection_class_embeddings_input_dim"},
     {"sample", "timestep", "encoder_hidden_states", "class_labels", "return_dict"}),
])
def test_tiny_generator_backbones_keep_their_diffusers_signatures(cls_name, init_kwargs, forward_kwargs):
    import diffusers

    cls = getattr(diffusers, cls_name)
    init = set(inspect.signature(cls.__init__).parameters)
    forward = set(inspect.signature(cls.forward).parameters)
    assert init_kwargs <= init, f"{cls_name}.__init__ lost {sorted(init_kwargs - init)}"
    assert forward_kwargs <= forward, f"{cls_name}.forward lost {sorted(forward_kwargs - forward)}"
    if cls_name == "UNet2DConditionModel":  # called positionally: unet(sample, timestep, ...)
        assert list(inspect.signature(cls.forward).parameters)[1:3] == ["sample", "timestep"]


def test_flow_schedule_reads_the_flow_match_scheduler():
    import diffusers

    params = inspect.signature(diffusers.FlowMatchEulerDiscreteScheduler.__init__).parameters
    assert {"num_train_timesteps", "shift"} <= set(params)
    assert "sigmas" in {n for n, _ in inspect.getmembers(diffusers.FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000))}
