"""Every offline rewrite rule in search order: the one list of which rules exist and which comes first."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kernel_medic.tools.repair.rules import (
    conv_layout,
    conv_sizes,
    conv_windows,
    crash_api,
    crash_entry,
    crash_host,
    crash_kernel,
    crash_launch,
    crash_lift,
    crash_syntax,
    formula,
    host,
    in_place,
    index,
    layout,
    loops,
    masks,
    normalisation,
    numerics,
    operators,
    precision,
    reduction,
)
from kernel_medic.tools.repair.rules.base import Rewrite, Rule, RuleContext, _tree, rules_of

# Search order: `propose` offers rule by rule in this order and keeps the first of equal proposals.
RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        # Crash rules first: they act only on a reported crash, and a crash hides every other symptom.
        crash_syntax.syntax_salvage,
        crash_api.api_moves_rule,
        crash_api.kernel_host_math,
        crash_api.drop_unused_import,
        crash_launch.drop_bad_annotation,
        crash_launch.jit_helper,
        crash_api.missing_import,
        crash_api.drop_import_time_code,
        crash_host.drop_torch_script,
        crash_host.entry_point,
        crash_entry.entry_arguments,
        crash_entry.entry_class,
        crash_host.flatten_leading_dims,
        crash_host.tensor_attribute,
        crash_host.broken_check,
        crash_host.kernel_free_name,
        crash_lift.device_function_launch,
        crash_host.launch_config,
        crash_launch.grid_tuple,
        crash_launch.host_device,
        crash_launch.launch_arguments,
        crash_launch.launch_tensors_not_pointers,
        crash_launch.view_to_reshape,
        crash_kernel.pointer_subscript,
        crash_kernel.arange_start,
        crash_kernel.tensor_method_drift,
        crash_kernel.dtype_call,
        crash_kernel.reduction_as_pairwise,
        crash_kernel.unknown_keyword,
        crash_kernel.dot_operand_dtype,
        crash_kernel.pointer_offsets,
        crash_kernel.power_operator,
        crash_launch.pow2_block,
        crash_launch.add_constexpr,
        crash_launch.dot_min_tile,
        crash_launch.output_allocation,
        numerics.neutral_other_max,
        masks.mask_le_to_lt,
        masks.store_mask,
        loops.grid_cdiv,
        loops.program_blind_index,
        loops.scalar_program_stride,
        precision.fp32_accumulator,
        precision.half_store,
        numerics.eps_inside_sqrt,
        normalisation.divide_by_n_not_block,
        layout.contiguous_inputs,
        layout.contiguous_view,
        in_place.clone_modified_input,
        in_place.write_back_update,
        masks.load_mask,
        masks.mask_precedence,
        masks.mask_offsets,
        numerics.neutral_other_exp,
        numerics.neutral_other_sum,
        numerics.softmax_max_subtraction,
        numerics.stable_log_exp,
        numerics.stable_exp_ratio,
        numerics.stable_log_sigmoid,
        numerics.online_softmax_rescale,
        precision.fp32_upcast_load,
        precision.dot_ieee,
        precision.drop_half_cast,
        precision.half_buffer,
        normalisation.variance_bias,
        normalisation.mask_centered,
        normalisation.affine_weight_bias,
        layout.stride_args_swap,
        layout.stride_index,
        layout.row_times_stride,
        loops.k_loop_advance,
        loops.k_loop_tail,
        layout.program_id_swap,
        layout.reduction_axis,
        layout.bias_broadcast_axis,
        operators.gelu_form,
        operators.silu_beta,
        operators.constructor_constant,
        operators.softplus_threshold,
        operators.scan_exclusive,
        operators.floor_mod,
        host.output_dtype,
        operators.conv_output_size,
        operators.loss_mean_count,
        operators.count_include_pad,
        operators.ignore_index,
        formula.reference_formula,
        formula.reference_constant,
        conv_sizes.conv_out_size,
        conv_windows.conv_input_coords,
        conv_windows.pad_upper_bound,
        conv_windows.avg_pool_valid_count,
        conv_windows.padding_mode,
        conv_windows.ceil_window_divisor,
        conv_layout.bias_never_added,
        conv_layout.store_batch_index,
        conv_layout.launch_strides_from_shape,
        index.unflip_taps,
        index.mask_axis_bound,
        index.channel_group_offset,
        index.affine_channel,
        index.flat_channel_index,
        index.mask_missing_axis,
        index.bias_axis_swap,
        index.upper_bound,
        index.row_times_block,
        index.pid_decomposition,
        index.stride_owner,
        index.log_space_product,
        index.half_rounding,
        host.zero_accumulated_output,
        host.grid_block_pair,
        host.reciprocal_scale,
        host.expected_output_dtype,
        host.loss_reduction,
        host.block_uncapped,
        host.rows_from_numel,
        host.shape_in_scale,
        host.pass_constructor_attribute,
        host.args_named_for_another,
        host.unused_size,
        reduction.logsumexp_shift,
        reduction.neutral_init,
        reduction.mask_scores,
        reduction.mask_reduced_operand,
        normalisation.variance_divisor,
        normalisation.drop_divisor,
    )
}
_unlisted = sorted({r.id for r in rules_of(__package__)} ^ set(RULES))
if _unlisted:
    raise ImportError(f"rules defined but not listed here, or listed but not defined: {', '.join(_unlisted)}")


def propose(
    source: str, rule_ids: Sequence[str] | None = None, context: RuleContext | None = None
) -> list[Rewrite]:
    """All rewrites of the given rules (default: all) in rule order, one per distinct resulting source."""
    ids: Iterable[str] = RULES if rule_ids is None else rule_ids
    unknown = [i for i in ids if i not in RULES]
    if unknown:
        raise ValueError(f"unknown rewrite rule(s): {', '.join(unknown)}")
    if _tree(source) is None:
        ids = [i for i in ids if RULES[i].text]  # only a text rule can mend a source that does not parse
    seen, out = {source}, []
    for rule_id in ids:
        for rewrite in RULES[rule_id].apply(source, context):
            if rewrite.source not in seen:
                seen.add(rewrite.source)
                out.append(rewrite)
    return out


def rank_rules(evidence: Sequence[str]) -> list[str]:
    """Rule ids, most evidence keywords matched by their symptoms first; ties keep registry order."""
    keys = set(evidence)
    return sorted(RULES, key=lambda rule_id: -len(keys & set(RULES[rule_id].symptoms)))
