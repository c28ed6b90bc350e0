# pasted from the guide's code example, then "tuned"
hyper_parameters = {
    # 必填参数
    "algorithm": "gspo",
    "batch_size": 64,
    "eval_steps": 1,
    "kl_loss_coef": 0.002,
    "learning_rate": 2e-6,
    "lr_scheduler_type": "linear",
    "lr_warmup_steps": -1,
    "n_epochs": 1,
    "n_rollouts": 8,
    "ppo_mini_batch_size": 8,
    "save_steps": 100,
    "save_strategy": "epoch",
    "save_total_limit": 1,
    "max_length": 8192,
    "max_prompt_length": 1024,
    # 选填参数（高级配置，一般无需修改）
    "n_gpus_rollout": 8,
    "n_gpus_training": 8,
    "nnodes_rollout": 1,
    "nnodes_training": 2,
    "inference_tensor_parallel_size": 2,
    "inference_gpu_memory_utilization": 0.95,  # more KV cache
    "tensor_model_parallel_size": 1,
    "pipeline_model_parallel_size": 1,
    "sequence_parallel_size": 1,
    "expert_model_parallel_size": 2,
}
