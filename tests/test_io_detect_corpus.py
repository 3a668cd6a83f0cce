"""Every real file and folder under MFU_REALDATA is detected as it was before detection weighed evidence.

The table was taken with the sniff-only detection (8 KiB head, best score wins) just before the
evidence stage came in; the evidence stage and load_run's next-candidate rule must change none of
it. Files no format reads today must still be refused with a LoadError (a format added for one of
them moves it into DETECTED). Files added to the folder later are not pinned here.
"""

from __future__ import annotations

import pytest
from _realdata_b import realdata_dir

from mfu_toolkit.io import detect_format
from mfu_toolkit.run import LoadError

DETECTED = {
    "accelerator_info": "wandb",
    "accelerator_info/0-KaiKai-0_stanford_alpaca_5qvjca60_wandb-metadata.json": "wandb",
    "accelerator_info/0-KaiKai-0_stanford_alpaca_5qvjca60_wandb-summary.json": "wandb",
    "accelerator_info/0-KaiKai-0_stanford_alpaca_v7i3k2p0_wandb-metadata.json": "wandb",
    "accelerator_info/0-KaiKai-0_stanford_alpaca_v7i3k2p0_wandb-summary.json": "wandb",
    "accelerator_info/0-KaiKai-0_stanford_alpaca_yxelkra3_config.yaml": "wandb",
    "accelerator_info/0-KaiKai-0_stanford_alpaca_yxelkra3_wandb-metadata.json": "wandb",
    "accelerator_info/0-KaiKai-0_stanford_alpaca_yxelkra3_wandb-summary.json": "wandb",
    "dcgm/NVIDIA_DCGM_issue151_dcgmi_dmon_mig_gpu-i_entities.excerpt.txt": "dcgm",
    "dcgm/NVIDIA_DCGM_issue244_dcgmi_dmon_8gpu_NA_multiplexing.excerpt.txt": "dcgm",
    "dcgm/NVIDIA_cloud-native-docs_gpu-telemetry_dcgm-exporter_DOC_EXAMPLE.rst": "dcgm",
    "dcgm/NVIDIA_dcgm-exporter_issue272_lowercase_names_pod_labels.excerpt.txt": "dcgm",
    "dcgm/NVIDIA_dcgm-exporter_issue512_h100_mig_full_labels.excerpt.txt": "dcgm",
    "dcgm/NVIDIA_dcgm-exporter_issue68_a30_mig_before_after_tf-benchmark.excerpt.txt": "dcgm",
    "dcgm/kubernetes-sigs_dra-driver-nvidia-gpu_issue166_a100_mig_inference.excerpt.txt": "dcgm",
    "deepspeed/HaibaraAiChan_megatron-deepspeed-moe-bak_gpt-0.125B-gpus-4-MoE-64.log": "megatron",
    "deepspeed/HaibaraAiChan_megatron-deepspeed-moe-bak_gpt-0.125B-gpus-4-no-MoE.log": "megatron",
    "deepspeed/argonne-lcf_Megatron-DeepSpeed_deprecated_aurora_sunspot_polaris.md": "megatron",
    "deepspeed/deepspeedai_DeepSpeedExamples_dschat_step1_sft_opt-1.3b_gbs128.log": "deepspeed",
    "deepspeed/deepspeedai_DeepSpeedExamples_dschat_step2_dpo_opt-350M_gbs32.log": "deepspeed",
    "deepspeed/deepspeedai_DeepSpeedExamples_dschat_step2_reward_opt-350m_gbs64.log": "deepspeed",
    "deepspeed/deepspeedai_DeepSpeedExamples_dschat_step3_rlhf_actor1.3b_critic350m_gbs64.log": "deepspeed",
    "deepspeed/deepspeedai_Megatron-DeepSpeed_issue98_flops_profiler_128gpu_header.excerpt.log": "deepspeed",
    "hf_trainer": "hf_trainer",
    "hf_trainer/Jaong_Checkpoint-of-CPT_all_results.json": "hf_trainer",
    "hf_trainer/Jaong_Checkpoint-of-CPT_trainer_state.json": "hf_trainer",
    "hf_trainer/alpaca7b_fsdp8xA100_run-v7i3k2p0_trainer_stdout_dicts.txt": "hf_trainer",
    "kineto": "kineto",
    "kineto/HTA_amd_mi250_minitoy_ROCm6_2_kineto.json.gz": "kineto",
    "kineto/HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz": "kineto",
    "kineto/HTA_trace_filter_sampled_rank-0_ws128.json.gz": "kineto",
    "kineto/HTA_trace_filter_sampled_rank-1_ws128.json.gz": "kineto",
    "lightning": "lightning",
    "lightning/0Xero7_slm_training_version_12_hparams.yaml": "lightning",
    "lightning/0Xero7_slm_training_version_12_metrics.csv": "lightning",
    "llamafactory/rameyjm7_SFT-Training-LLM_trainer_log.jsonl": "llamafactory",
    "llamafactory/syGOAT_Mistral-v0.2-Translator-bf16_trainer_log.jsonl": "llamafactory",
    "maxtext/AI-Hypercomputer_maxtext_pr3717_nan_loss_tpu.log.py": "maxtext",
    "maxtext/AI-Hypercomputer_maxtext_run_gpt3_1node_h100x8.sh": "maxtext",
    "maxtext/AI-Hypercomputer_maxtext_run_llama2_pgo_h100x8_nsys.sh": "maxtext",
    "maxtext/AI-Hypercomputer_maxtext_run_llama2_pre_pgo_h100x8.sh": "maxtext",
    "maxtext/AI-Hypercomputer_maxtext_understand_logs_and_metrics_v5p8.md": "maxtext",
    "maxtext/AI-Hypercomputer_maxtext_xpk_large_scale_guide_tpu_2023.sh": "maxtext",
    "megatron/NVIDIA-Megatron-LM_README_STRAGGLER_example.log": "megatron",
    "megatron/NVIDIA-Megatron-LM_issue756_mixtral8x7b_16xH100_iterations.log": "megatron",
    "megatron/epfLLM-Megatron-LLM_issue11_old_format_no_timestamp.log": "megatron",
    "megatron/megatron_golden_values_gpt3_tp4_pp1_resume_torch_dist_dgx_h100.json": "megatron_json",
    "megatron/megatron_golden_values_gpt3_tp4_pp1_resume_torch_dist_model_config.yaml": "megatron_json",
    "megatron/megatron_golden_values_gpt3_weekly_tp2_pp2_fp8_dgx_h100.json": "megatron_json",
    "megatron/megatron_golden_values_gpt3_weekly_tp2_pp2_fp8_model_config.yaml": "megatron_json",
    "megatron_timers/DeepLink-org_AIChipBenchmark_GPT3_README_megatron_deepspeed_tgs.md": "megatron",
    "megatron_timers/DeepLink-org_AIChipBenchmark_QwenVL_README_log_throughput.md": "megatron",
    "megatron_timers/NVIDIA_nccl_issue743_megatron_bert_old_timer_format.log": "megatron",
    "megatron_timers/argonne-lcf_Megatron-DeepSpeed_cooldown_aurora_3072xpu.md": "megatron",
    "megatron_timers/bigcode-project_Megatron-LM_issue28_minmax_timers_1B_ul2.log": "megatron",
    "megatron_timers/gnosia93_slurm-on-aws_lesson_9-megatron-lm_4x8gpu.md": "megatron",
    "mlperf/v4.0_NVIDIA_h200_ngc24.04_nemo_llama2_70b_lora_result_0_with_SYSJSON.txt": "mlperf",
    "mlperf/v4.1_Fujitsu_GX2560M7_H100_SXM_80GBx4_dlrm_dcnv2_result_0.txt": "mlperf",
    "mlperf/v4.1_Google_cloud-tpu-trillium-1024-maxtext_gpt3_result_0.txt": "mlperf",
    "mlperf/v4.1_NVIDIA_eos_n64_ngc24.09_nemo_gpt3_result_0.txt": "mlperf",
    "mlperf/v4.1_NVIDIA_h200_ngc23.09_pytorch_bert_result_0.txt": "mlperf",
    "mlperf/v4.1_NVIDIA_h200_ngc24.04_merlin_hugectr_dlrm_dcnv2_result_0.txt": "mlperf",
    "mlperf/v4.1_NVIDIA_h200_ngc24.09_nemo_llama2_70b_lora_result_0.txt": "mlperf",
    "mlperf/v5.0_NVIDIA_nyx_n1_ngc25.03_hugectr_dlrm_dcnv2_result_0.txt": "mlperf",
    "mlperf/v5.0_NVIDIA_tyche_ngpu64_ngc25.03_hugectr_dlrm_dcnv2_result_0.txt": "mlperf",
    "mlperf/v5.0_QCT_D74H-7U_dlrm_dcnv2_result_0.txt": "mlperf",
    "nemo/DeepLink-org_AIChipBenchmark_LLaMa-V3_README_nemo2.md": "nemo",
    "nemo/DeepLink-org_AIChipBenchmark_Qwenllm_README_nemo2.md": "nemo",
    "nemo/NVIDIA-NeMo_Megatron-Bridge_golden_values_deepseek_pretrain_fsdp_gb200.json": "megatron_json",
    "nemo/NVIDIA_NeMo_E2E-Embedding-Finetuning_2gpu.ipynb": "nemo",
    "nemo/NVIDIA_NeMo_diffusion_readme_2gpu_train_mock.rst": "nemo",
    "nemo/NVIDIA_NeMo_resiliency-demo_cell14_baseline.extracted.log": "nemo",
    "nemo/NVIDIA_NeMo_resiliency-demo_cell22_crash_and_injob_restart.extracted.log": "nemo",
    "nemo/NVIDIA_NeMo_resiliency-demo_cell29_straggler_detection.extracted.log": "nemo",
    "nemo/NVIDIA_NeMo_resiliency-demo_cell36_straggler_gpu_clocks_locked.extracted.log": "nemo",
    "nemo/NVIDIA_NeMo_resiliency-demo_cell46_preemption.extracted.log": "nemo",
    "nemo/NVIDIA_NeMo_resiliency-in-pretraining-demo_8gpu.ipynb": "nemo",
    "nemo/aws-samples_awsome-distributed-training_nemo1_EKS_README_L303.excerpt.txt": "nemo",
    "nemo/aws-samples_awsome-distributed-training_nemo2_kubernetes_README_L636-692.excerpt.md": "nemo",
    "slurm/llnl-maestrowf_pr405_sacct_default_output.txt": "sacct",
    "slurm/meekrob_slurmdog_sacct_json_slurm23.02_cpu_job.json": "sacct",
    "gpu_goodput/AI-Hypercomputer_resiliency_goodput_event_log.log": "gpu_goodput",
    "nccl": "nccl",
    "nccl/DataDog_datadog-agent_nccl_inspector_v4.0_real_payload_3rank.excerpt.jsonl": "nccl",
    "nccl/NVIDIA_Megatron-LM_issue516_8gpu_channels_trees.excerpt.log": "nccl",
    "nccl/NVIDIA_nccl_issue1609_h800_4rank_comm_split.excerpt.redacted.log": "nccl",
    "nccl/NVIDIA_nccl_issue534_init_timings_8xH100_nccl2.22.excerpt.log": "nccl",
    "nsys/GindaChen_nsys-ai_mfu_2gpu_after.sqlite": "nsys",
    "nsys/GindaChen_nsys-ai_mfu_2gpu_before.sqlite": "nsys",
    "flight_recorder/gpu_error_1st": "flight_recorder",
    "xplane": "xplane",  # detected; loading it is refused: four sessions of one host
    "xplane/AMD-AGI_TraceLens_mi300_jax08_attention_tw003.xplane.pb": "xplane",
    "xplane/AMD-AGI_TraceLens_mi300_jax08_conv_tw003.xplane.pb": "xplane",
    "xplane/AMD-AGI_TraceLens_mi300_jax08_elementwise_tw003.xplane.pb": "xplane",
    "xplane/AMD-AGI_TraceLens_mi300_jax08_gemm_tw003.xplane.pb": "xplane",
    "flight_recorder/lock_gil_1st": "flight_recorder",
    "straggler_ops": "straggler_ops",
    "straggler_ops/meta-AR.yaml": "straggler_ops",
    "straggler_ops/meta-SE.yaml": "straggler_ops",
    "straggler_ops/meta-ST.yaml": "straggler_ops",
    "straggler_ops/trace-AR.parquet": "straggler_ops",
    "straggler_ops/trace-SE.parquet": "straggler_ops",
    "straggler_ops/trace-ST.parquet": "straggler_ops",
    "tensorboard": "tensorboard",
    "tensorboard/megatron_deepseek_mtp_dummy": "tensorboard",
    "tensorboard/megatron_deepseek_mtp_dummy/events.out.tfevents.1769037870.pool0-01476.3253909.0": "tensorboard",
    "tensorboard/megatron_deepseek_mtp_dummy/events.out.tfevents.1769037919.pool0-01476.3254808.0": "tensorboard",
    "tensorboard/megatron_noua_1n_gbs16_localattn": "tensorboard",
    "tensorboard/megatron_noua_1n_gbs16_localattn/events.out.tfevents.1774437444.ip-26-0-168-34.3758117.0":
        "tensorboard",
    "tensorboard/megatron_noua_1n_gbs16_localattn/events.out.tfevents.1774437717.ip-26-0-168-34.3760666.0":
        "tensorboard",
    "tensorboard/megatron_noua_1n_gbs16_localattn/events.out.tfevents.1774437869.ip-26-0-168-34.3763426.0":
        "tensorboard",
    "tensorboard/megatron_noua_1n_gbs16_localattn/events.out.tfevents.1774437971.ip-26-0-168-34.3765754.0":
        "tensorboard",
    "torchtitan/pytorch-torchtitan_pr1437_rank0_prefixed.log": "torchtitan",
    "torchtitan/pytorch-torchtitan_pr2389_all_ranks_unprefixed.log": "torchtitan",
    "torchtitan/pytorch-torchtitan_pr3393_rank0_steps22-29.log": "torchtitan",
    "wandb": "wandb",
    "wandb/alpaca7b_fsdp8xA100_run-v7i3k2p0_history_from_dotwandb.csv": "wandb",
    "wandb/alpaca7b_fsdp8xA100_run-v7i3k2p0_system_stats_from_dotwandb.csv": "wandb",
    "wandb/alpaca7b_fsdp8xA100_run-v7i3k2p0_wandb-summary.json": "wandb",
}
# Not recognised by any format (a folder of two runs is none: nsys/, llamafactory/, slurm/), nor the
# scenario notes beside the Flight Recorder dumps (fault_injection.log, the reference tables).
NOT_RECOGNISED = (
    "accelerator_info/SeunghyunSEO_lingua_exp_logs_README_2xA100.md",
    "accelerator_info/pytorch_torchtitan_issue1570_deepseek_v3_671b_256gpu_cuda_capacity.excerpt.log",
    "dcgm",
    "deepspeed",
    "flight_recorder",
    "gpu_goodput",
    "llamafactory",
    "maxtext",
    "megatron",
    "megatron_timers",
    "mlperf",
    "nemo",
    "nsys",
    "slurm",
    "torchtitan",
)


@pytest.mark.parametrize("rel", sorted(DETECTED))
def test_real_input_is_detected_as_before(rel):
    assert detect_format(realdata_dir(rel)) == DETECTED[rel]


def test_real_inputs_no_format_reads_are_still_refused():
    root = realdata_dir()
    notes = sorted(p.relative_to(root).as_posix() for p in (root / "flight_recorder").rglob("*")
                   if p.is_file() and not p.name.startswith("_dump_"))
    assert len(notes) == 4  # two scenarios: fault_injection.log and the reference table each
    for rel in [*NOT_RECOGNISED, *notes]:
        with pytest.raises(LoadError, match="could not recognise"):
            detect_format(root / rel)


def test_every_flight_recorder_dump_is_detected_alone():
    dumps = sorted(realdata_dir("flight_recorder").rglob("_dump_*"))
    assert len(dumps) == 32  # 16 ranks in each of the two scenarios
    assert {detect_format(p) for p in dumps} == {"flight_recorder"}
