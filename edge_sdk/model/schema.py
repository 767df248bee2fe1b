"""Facts of the TFLite flatbuffer schema (schema.fbs), as data: enums, unions and table layouts.

Transcribed from tensorflow/compiler/mlir/lite/schema/schema.fbs (tflite-micro commit 90b983c, 2026-08-20).
A table field is (name, type, default, slot): ``slot`` is the field id, so its vtable entry is at 4 + 2 * slot.
Types are schema scalars (bool byte ubyte short ushort int uint long ulong float double), ``string``,
``[T]`` for vectors, an enum/table/union name, or ``@Union`` for a union's hidden type field.
Defaults are schema text (None: zero / absent).
"""

# fmt: off
ENUMS: dict[str, tuple[str, dict[int, str]]] = {
    'TensorType': ('byte', {
        0: 'FLOAT32', 1: 'FLOAT16', 2: 'INT32', 3: 'UINT8',
        4: 'INT64', 5: 'STRING', 6: 'BOOL', 7: 'INT16',
        8: 'COMPLEX64', 9: 'INT8', 10: 'FLOAT64', 11: 'COMPLEX128',
        12: 'UINT64', 13: 'RESOURCE', 14: 'VARIANT', 15: 'UINT32',
        16: 'UINT16', 17: 'INT4', 18: 'BFLOAT16', 19: 'INT2',
        20: 'UINT4', 21: 'FLOAT8_E4M3FN', 22: 'FLOAT8_E5M2',
    }),
    'DimensionType': ('byte', {
        0: 'DENSE', 1: 'SPARSE_CSR',
    }),
    'BuiltinOperator': ('int32', {
        0: 'ADD', 1: 'AVERAGE_POOL_2D', 2: 'CONCATENATION', 3: 'CONV_2D',
        4: 'DEPTHWISE_CONV_2D', 5: 'DEPTH_TO_SPACE', 6: 'DEQUANTIZE', 7: 'EMBEDDING_LOOKUP',
        8: 'FLOOR', 9: 'FULLY_CONNECTED', 10: 'HASHTABLE_LOOKUP', 11: 'L2_NORMALIZATION',
        12: 'L2_POOL_2D', 13: 'LOCAL_RESPONSE_NORMALIZATION', 14: 'LOGISTIC', 15: 'LSH_PROJECTION',
        16: 'LSTM', 17: 'MAX_POOL_2D', 18: 'MUL', 19: 'RELU',
        20: 'RELU_N1_TO_1', 21: 'RELU6', 22: 'RESHAPE', 23: 'RESIZE_BILINEAR',
        24: 'RNN', 25: 'SOFTMAX', 26: 'SPACE_TO_DEPTH', 27: 'SVDF',
        28: 'TANH', 29: 'CONCAT_EMBEDDINGS', 30: 'SKIP_GRAM', 31: 'CALL',
        32: 'CUSTOM', 33: 'EMBEDDING_LOOKUP_SPARSE', 34: 'PAD', 35: 'UNIDIRECTIONAL_SEQUENCE_RNN',
        36: 'GATHER', 37: 'BATCH_TO_SPACE_ND', 38: 'SPACE_TO_BATCH_ND', 39: 'TRANSPOSE',
        40: 'MEAN', 41: 'SUB', 42: 'DIV', 43: 'SQUEEZE',
        44: 'UNIDIRECTIONAL_SEQUENCE_LSTM', 45: 'STRIDED_SLICE', 46: 'BIDIRECTIONAL_SEQUENCE_RNN', 47: 'EXP',
        48: 'TOPK_V2', 49: 'SPLIT', 50: 'LOG_SOFTMAX', 51: 'DELEGATE',
        52: 'BIDIRECTIONAL_SEQUENCE_LSTM', 53: 'CAST', 54: 'PRELU', 55: 'MAXIMUM',
        56: 'ARG_MAX', 57: 'MINIMUM', 58: 'LESS', 59: 'NEG',
        60: 'PADV2', 61: 'GREATER', 62: 'GREATER_EQUAL', 63: 'LESS_EQUAL',
        64: 'SELECT', 65: 'SLICE', 66: 'SIN', 67: 'TRANSPOSE_CONV',
        68: 'SPARSE_TO_DENSE', 69: 'TILE', 70: 'EXPAND_DIMS', 71: 'EQUAL',
        72: 'NOT_EQUAL', 73: 'LOG', 74: 'SUM', 75: 'SQRT',
        76: 'RSQRT', 77: 'SHAPE', 78: 'POW', 79: 'ARG_MIN',
        80: 'FAKE_QUANT', 81: 'REDUCE_PROD', 82: 'REDUCE_MAX', 83: 'PACK',
        84: 'LOGICAL_OR', 85: 'ONE_HOT', 86: 'LOGICAL_AND', 87: 'LOGICAL_NOT',
        88: 'UNPACK', 89: 'REDUCE_MIN', 90: 'FLOOR_DIV', 91: 'REDUCE_ANY',
        92: 'SQUARE', 93: 'ZEROS_LIKE', 94: 'FILL', 95: 'FLOOR_MOD',
        96: 'RANGE', 97: 'RESIZE_NEAREST_NEIGHBOR', 98: 'LEAKY_RELU', 99: 'SQUARED_DIFFERENCE',
        100: 'MIRROR_PAD', 101: 'ABS', 102: 'SPLIT_V', 103: 'UNIQUE',
        104: 'CEIL', 105: 'REVERSE_V2', 106: 'ADD_N', 107: 'GATHER_ND',
        108: 'COS', 109: 'WHERE', 110: 'RANK', 111: 'ELU',
        112: 'REVERSE_SEQUENCE', 113: 'MATRIX_DIAG', 114: 'QUANTIZE', 115: 'MATRIX_SET_DIAG',
        116: 'ROUND', 117: 'HARD_SWISH', 118: 'IF', 119: 'WHILE',
        120: 'NON_MAX_SUPPRESSION_V4', 121: 'NON_MAX_SUPPRESSION_V5', 122: 'SCATTER_ND', 123: 'SELECT_V2',
        124: 'DENSIFY', 125: 'SEGMENT_SUM', 126: 'BATCH_MATMUL', 127: 'PLACEHOLDER_FOR_GREATER_OP_CODES',
        128: 'CUMSUM', 129: 'CALL_ONCE', 130: 'BROADCAST_TO', 131: 'RFFT2D',
        132: 'CONV_3D', 133: 'IMAG', 134: 'REAL', 135: 'COMPLEX_ABS',
        136: 'HASHTABLE', 137: 'HASHTABLE_FIND', 138: 'HASHTABLE_IMPORT', 139: 'HASHTABLE_SIZE',
        140: 'REDUCE_ALL', 141: 'CONV_3D_TRANSPOSE', 142: 'VAR_HANDLE', 143: 'READ_VARIABLE',
        144: 'ASSIGN_VARIABLE', 145: 'BROADCAST_ARGS', 146: 'RANDOM_STANDARD_NORMAL', 147: 'BUCKETIZE',
        148: 'RANDOM_UNIFORM', 149: 'MULTINOMIAL', 150: 'GELU', 151: 'DYNAMIC_UPDATE_SLICE',
        152: 'RELU_0_TO_1', 153: 'UNSORTED_SEGMENT_PROD', 154: 'UNSORTED_SEGMENT_MAX', 155: 'UNSORTED_SEGMENT_SUM',
        156: 'ATAN2', 157: 'UNSORTED_SEGMENT_MIN', 158: 'SIGN', 159: 'BITCAST',
        160: 'BITWISE_XOR', 161: 'RIGHT_SHIFT', 162: 'STABLEHLO_LOGISTIC', 163: 'STABLEHLO_ADD',
        164: 'STABLEHLO_DIVIDE', 165: 'STABLEHLO_MULTIPLY', 166: 'STABLEHLO_MAXIMUM', 167: 'STABLEHLO_RESHAPE',
        168: 'STABLEHLO_CLAMP', 169: 'STABLEHLO_CONCATENATE', 170: 'STABLEHLO_BROADCAST_IN_DIM', 171: 'STABLEHLO_CONVOLUTION',
        172: 'STABLEHLO_SLICE', 173: 'STABLEHLO_CUSTOM_CALL', 174: 'STABLEHLO_REDUCE', 175: 'STABLEHLO_ABS',
        176: 'STABLEHLO_AND', 177: 'STABLEHLO_COSINE', 178: 'STABLEHLO_EXPONENTIAL', 179: 'STABLEHLO_FLOOR',
        180: 'STABLEHLO_LOG', 181: 'STABLEHLO_MINIMUM', 182: 'STABLEHLO_NEGATE', 183: 'STABLEHLO_OR',
        184: 'STABLEHLO_POWER', 185: 'STABLEHLO_REMAINDER', 186: 'STABLEHLO_RSQRT', 187: 'STABLEHLO_SELECT',
        188: 'STABLEHLO_SUBTRACT', 189: 'STABLEHLO_TANH', 190: 'STABLEHLO_SCATTER', 191: 'STABLEHLO_COMPARE',
        192: 'STABLEHLO_CONVERT', 193: 'STABLEHLO_DYNAMIC_SLICE', 194: 'STABLEHLO_DYNAMIC_UPDATE_SLICE', 195: 'STABLEHLO_PAD',
        196: 'STABLEHLO_IOTA', 197: 'STABLEHLO_DOT_GENERAL', 198: 'STABLEHLO_REDUCE_WINDOW', 199: 'STABLEHLO_SORT',
        200: 'STABLEHLO_WHILE', 201: 'STABLEHLO_GATHER', 202: 'STABLEHLO_TRANSPOSE', 203: 'DILATE',
        204: 'STABLEHLO_RNG_BIT_GENERATOR', 205: 'REDUCE_WINDOW', 206: 'STABLEHLO_COMPOSITE', 207: 'STABLEHLO_SHIFT_LEFT',
        208: 'STABLEHLO_CBRT', 209: 'STABLEHLO_CASE',
    }),
    'StablehloPrecisionConfig': ('uint', {
        0: 'DEFAULT', 1: 'HIGH', 2: 'HIGHEST',
    }),
    'StablehloComparisonDirection': ('uint', {
        0: 'STABLEHLO_COMPARISON_DIRECTION_EQ', 1: 'STABLEHLO_COMPARISON_DIRECTION_NE', 2: 'STABLEHLO_COMPARISON_DIRECTION_GE', 3: 'STABLEHLO_COMPARISON_DIRECTION_GT',
        4: 'STABLEHLO_COMPARISON_DIRECTION_LE', 5: 'STABLEHLO_COMPARISON_DIRECTION_LT',
    }),
    'StablehloComparisonType': ('uint', {
        0: 'STABLEHLO_COMPARISON_TYPE_NOTYPE', 1: 'STABLEHLO_COMPARISON_TYPE_FLOAT', 2: 'STABLEHLO_COMPARISON_TYPE_FLOAT_TOTAL_ORDER', 3: 'STABLEHLO_COMPARISON_TYPE_SIGNED',
        4: 'STABLEHLO_COMPARISON_TYPE_UNSIGNED',
    }),
    'RngAlgorithm': ('byte', {
        0: 'DEFAULT', 1: 'PHILOX', 2: 'THREEFRY',
    }),
    'Padding': ('byte', {
        0: 'SAME', 1: 'VALID',
    }),
    'ActivationFunctionType': ('byte', {
        0: 'NONE', 1: 'RELU', 2: 'RELU_N1_TO_1', 3: 'RELU6',
        4: 'TANH', 5: 'SIGN_BIT',
    }),
    'LSHProjectionType': ('byte', {
        0: 'UNKNOWN', 1: 'SPARSE', 2: 'DENSE',
    }),
    'FullyConnectedOptionsWeightsFormat': ('byte', {
        0: 'DEFAULT', 1: 'SHUFFLED4x16INT8',
    }),
    'LSTMKernelType': ('byte', {
        0: 'FULL', 1: 'BASIC',
    }),
    'CombinerType': ('byte', {
        0: 'SUM', 1: 'MEAN', 2: 'SQRTN',
    }),
    'MirrorPadMode': ('byte', {
        0: 'REFLECT', 1: 'SYMMETRIC',
    }),
    'ReduceWindowFunction': ('int', {
        0: 'UNSUPPORTED', 1: 'ADD', 2: 'MUL', 3: 'MINIMUM',
        4: 'MAXIMUM', 5: 'ALL', 6: 'ANY',
    }),
    'CustomOptionsFormat': ('byte', {
        0: 'FLEXBUFFERS',
    }),
}

UNIONS: dict[str, dict[int, str]] = {
    'QuantizationDetails': {
        1: 'CustomQuantization', 2: 'BlockwiseQuantization', 3: 'MultiAxisQuantization',
    },
    'SparseIndexVector': {
        1: 'Int32Vector', 2: 'Uint16Vector', 3: 'Uint8Vector',
    },
    'BuiltinOptions': {
        1: 'Conv2DOptions', 2: 'DepthwiseConv2DOptions', 3: 'ConcatEmbeddingsOptions',
        4: 'LSHProjectionOptions', 5: 'Pool2DOptions', 6: 'SVDFOptions',
        7: 'RNNOptions', 8: 'FullyConnectedOptions', 9: 'SoftmaxOptions',
        10: 'ConcatenationOptions', 11: 'AddOptions', 12: 'L2NormOptions',
        13: 'LocalResponseNormalizationOptions', 14: 'LSTMOptions', 15: 'ResizeBilinearOptions',
        16: 'CallOptions', 17: 'ReshapeOptions', 18: 'SkipGramOptions',
        19: 'SpaceToDepthOptions', 20: 'EmbeddingLookupSparseOptions', 21: 'MulOptions',
        22: 'PadOptions', 23: 'GatherOptions', 24: 'BatchToSpaceNDOptions',
        25: 'SpaceToBatchNDOptions', 26: 'TransposeOptions', 27: 'ReducerOptions',
        28: 'SubOptions', 29: 'DivOptions', 30: 'SqueezeOptions',
        31: 'SequenceRNNOptions', 32: 'StridedSliceOptions', 33: 'ExpOptions',
        34: 'TopKV2Options', 35: 'SplitOptions', 36: 'LogSoftmaxOptions',
        37: 'CastOptions', 38: 'DequantizeOptions', 39: 'MaximumMinimumOptions',
        40: 'ArgMaxOptions', 41: 'LessOptions', 42: 'NegOptions',
        43: 'PadV2Options', 44: 'GreaterOptions', 45: 'GreaterEqualOptions',
        46: 'LessEqualOptions', 47: 'SelectOptions', 48: 'SliceOptions',
        49: 'TransposeConvOptions', 50: 'SparseToDenseOptions', 51: 'TileOptions',
        52: 'ExpandDimsOptions', 53: 'EqualOptions', 54: 'NotEqualOptions',
        55: 'ShapeOptions', 56: 'PowOptions', 57: 'ArgMinOptions',
        58: 'FakeQuantOptions', 59: 'PackOptions', 60: 'LogicalOrOptions',
        61: 'OneHotOptions', 62: 'LogicalAndOptions', 63: 'LogicalNotOptions',
        64: 'UnpackOptions', 65: 'FloorDivOptions', 66: 'SquareOptions',
        67: 'ZerosLikeOptions', 68: 'FillOptions', 69: 'BidirectionalSequenceLSTMOptions',
        70: 'BidirectionalSequenceRNNOptions', 71: 'UnidirectionalSequenceLSTMOptions', 72: 'FloorModOptions',
        73: 'RangeOptions', 74: 'ResizeNearestNeighborOptions', 75: 'LeakyReluOptions',
        76: 'SquaredDifferenceOptions', 77: 'MirrorPadOptions', 78: 'AbsOptions',
        79: 'SplitVOptions', 80: 'UniqueOptions', 81: 'ReverseV2Options',
        82: 'AddNOptions', 83: 'GatherNdOptions', 84: 'CosOptions',
        85: 'WhereOptions', 86: 'RankOptions', 87: 'ReverseSequenceOptions',
        88: 'MatrixDiagOptions', 89: 'QuantizeOptions', 90: 'MatrixSetDiagOptions',
        91: 'HardSwishOptions', 92: 'IfOptions', 93: 'WhileOptions',
        94: 'DepthToSpaceOptions', 95: 'NonMaxSuppressionV4Options', 96: 'NonMaxSuppressionV5Options',
        97: 'ScatterNdOptions', 98: 'SelectV2Options', 99: 'DensifyOptions',
        100: 'SegmentSumOptions', 101: 'BatchMatMulOptions', 102: 'CumsumOptions',
        103: 'CallOnceOptions', 104: 'BroadcastToOptions', 105: 'Rfft2dOptions',
        106: 'Conv3DOptions', 107: 'HashtableOptions', 108: 'HashtableFindOptions',
        109: 'HashtableImportOptions', 110: 'HashtableSizeOptions', 111: 'VarHandleOptions',
        112: 'ReadVariableOptions', 113: 'AssignVariableOptions', 114: 'RandomOptions',
        115: 'BucketizeOptions', 116: 'GeluOptions', 117: 'DynamicUpdateSliceOptions',
        118: 'UnsortedSegmentProdOptions', 119: 'UnsortedSegmentMaxOptions', 120: 'UnsortedSegmentMinOptions',
        121: 'UnsortedSegmentSumOptions', 122: 'ATan2Options', 123: 'SignOptions',
        124: 'BitcastOptions', 125: 'BitwiseXorOptions', 126: 'RightShiftOptions',
    },
    'BuiltinOptions2': {
        1: 'StablehloConcatenateOptions', 2: 'StablehloBroadcastInDimOptions', 3: 'StablehloSliceOptions',
        4: 'StablehloConvolutionOptions', 5: 'StablehloCustomCallOptions', 6: 'StablehloReduceOptions',
        7: 'StablehloScatterOptions', 8: 'StablehloCompareOptions', 9: 'StablehloDynamicSliceOptions',
        10: 'StablehloPadOptions', 11: 'StablehloIotaOptions', 12: 'StablehloDotGeneralOptions',
        13: 'StablehloReduceWindowOptions', 14: 'StablehloSortOptions', 15: 'StablehloWhileOptions',
        16: 'StablehloGatherOptions', 17: 'StablehloTransposeOptions', 18: 'DilateOptions',
        19: 'StablehloRngBitGeneratorOptions', 20: 'ReduceWindowOptions (deprecated)', 21: 'StableHLOCompositeOptions',
        22: 'StablehloShiftLeftOptions', 23: 'StablehloCaseOptions',
    },
}

TABLES: dict[str, tuple[tuple[str, str, str | None, int], ...]] = {
    'CustomQuantization': (
        ('custom', '[ubyte]', None, 0),
    ),
    'BlockwiseQuantization': (
        ('scales', 'int', None, 0),
        ('zero_points', 'int', None, 1),
        ('block_size', 'int', None, 2),
    ),
    'MultiAxisQuantization': (
        ('scales', 'int', None, 0),
        ('zero_points', 'int', None, 1),
        ('block_size', 'int', None, 2),
        ('quantized_dimensions', '[int]', None, 3),
    ),
    'QuantizationParameters': (
        ('min', '[float]', None, 0),
        ('max', '[float]', None, 1),
        ('scale', '[float]', None, 2),
        ('zero_point', '[long]', None, 3),
        ('details_type', '@QuantizationDetails', None, 4),
        ('details', 'QuantizationDetails', None, 5),
        ('quantized_dimension', 'int', None, 6),
    ),
    'Int32Vector': (
        ('values', '[int]', None, 0),
    ),
    'Uint16Vector': (
        ('values', '[ushort]', None, 0),
    ),
    'Uint8Vector': (
        ('values', '[ubyte]', None, 0),
    ),
    'DimensionMetadata': (
        ('format', 'DimensionType', None, 0),
        ('dense_size', 'int', None, 1),
        ('array_segments_type', '@SparseIndexVector', None, 2),
        ('array_segments', 'SparseIndexVector', None, 3),
        ('array_indices_type', '@SparseIndexVector', None, 4),
        ('array_indices', 'SparseIndexVector', None, 5),
    ),
    'SparsityParameters': (
        ('traversal_order', '[int]', None, 0),
        ('block_map', '[int]', None, 1),
        ('dim_metadata', '[DimensionMetadata]', None, 2),
    ),
    'VariantSubType': (
        ('shape', '[int]', None, 0),
        ('type', 'TensorType', None, 1),
        ('has_rank', 'bool', 'false', 2),
    ),
    'Tensor': (
        ('shape', '[int]', None, 0),
        ('type', 'TensorType', None, 1),
        ('buffer', 'uint', None, 2),
        ('name', 'string', None, 3),
        ('quantization', 'QuantizationParameters', None, 4),
        ('is_variable', 'bool', 'false', 5),
        ('sparsity', 'SparsityParameters', None, 6),
        ('shape_signature', '[int]', None, 7),
        ('has_rank', 'bool', 'false', 8),
        ('variant_tensors', '[VariantSubType]', None, 9),
        ('external_buffer', 'uint', None, 10),
    ),
    'StablehloGatherOptions': (
        ('offset_dims', '[long]', None, 0),
        ('collapsed_slice_dims', '[long]', None, 1),
        ('start_index_map', '[long]', None, 2),
        ('index_vector_dim', 'long', None, 3),
        ('slice_sizes', '[long]', None, 4),
        ('indices_are_sorted', 'bool', None, 5),
    ),
    'StablehloTransposeOptions': (
        ('permutation', '[long]', None, 0),
    ),
    'StablehloDotGeneralOptions': (
        ('lhs_batching_dimensions', '[long]', None, 0),
        ('rhs_batching_dimensions', '[long]', None, 1),
        ('lhs_contracting_dimensions', '[long]', None, 2),
        ('rhs_contracting_dimensions', '[long]', None, 3),
        ('precision_config', '[StablehloPrecisionConfig]', None, 4),
    ),
    'StablehloReduceWindowOptions': (
        ('window_dimensions', '[long]', None, 0),
        ('window_strides', '[long]', None, 1),
        ('base_dilations', '[long]', None, 2),
        ('window_dilations', '[long]', None, 3),
        ('padding', '[long]', None, 4),
        ('body_subgraph_index', 'int', None, 5),
    ),
    'StablehloWhileOptions': (
        ('cond_subgraph_index', 'int', None, 0),
        ('body_subgraph_index', 'int', None, 1),
    ),
    'StablehloSortOptions': (
        ('dimension', 'long', None, 0),
        ('is_stable', 'bool', None, 1),
        ('comparator_subgraph_index', 'int', None, 2),
    ),
    'StablehloConcatenateOptions': (
        ('dimension', 'long', None, 0),
    ),
    'StablehloBroadcastInDimOptions': (
        ('broadcast_dimensions', '[long]', None, 0),
    ),
    'StablehloCompareOptions': (
        ('comparison_direction', 'StablehloComparisonDirection', None, 0),
        ('compare_type', 'StablehloComparisonType', None, 1),
    ),
    'StablehloDynamicSliceOptions': (
        ('slice_sizes', '[long]', None, 0),
    ),
    'StablehloPadOptions': (
        ('edge_padding_low', '[long]', None, 0),
        ('edge_padding_high', '[long]', None, 1),
        ('interior_padding', '[long]', None, 2),
    ),
    'StablehloIotaOptions': (
        ('iota_dimension', 'long', None, 0),
    ),
    'StablehloCustomCallOptions': (
        ('call_target_name', 'string', None, 0),
        ('has_side_effect', 'bool', None, 1),
        ('backend_config', 'string', None, 2),
        ('api_version', 'int', None, 3),
        ('called_computations', '[int]', None, 4),
        ('custom_attributes', '[ubyte]', None, 5),
    ),
    'StablehloReduceOptions': (
        ('dimensions', '[long]', None, 0),
        ('body_subgraph_index', 'int', None, 1),
    ),
    'StablehloSliceOptions': (
        ('start_indices', '[long]', None, 0),
        ('limit_indices', '[long]', None, 1),
        ('strides', '[long]', None, 2),
    ),
    'StablehloConvolutionOptions': (
        ('window_strides', '[long]', None, 0),
        ('padding', '[long]', None, 1),
        ('lhs_dilation', '[long]', None, 2),
        ('rhs_dilation', '[long]', None, 3),
        ('window_reversal', '[bool]', None, 4),
        ('input_batch_dimension', 'long', None, 5),
        ('input_feature_dimension', 'long', None, 6),
        ('input_spatial_dimensions', '[long]', None, 7),
        ('kernel_input_feature_dimension', 'long', None, 8),
        ('kernel_output_feature_dimension', 'long', None, 9),
        ('kernel_spatial_dimensions', '[long]', None, 10),
        ('output_batch_dimension', 'long', None, 11),
        ('output_feature_dimension', 'long', None, 12),
        ('output_spatial_dimensions', '[long]', None, 13),
        ('feature_group_count', 'long', None, 14),
        ('batch_group_count', 'long', None, 15),
        ('precision_config', '[StablehloPrecisionConfig]', None, 16),
    ),
    'StablehloScatterOptions': (
        ('indices_are_sorted', 'bool', None, 0),
        ('update_window_dims', '[long]', None, 1),
        ('inserted_window_dims', '[long]', None, 2),
        ('scatter_dims_to_operand_dims', '[long]', None, 3),
        ('index_vector_dim', 'long', None, 4),
        ('unique_indices', 'bool', None, 5),
        ('update_computation_subgraph_index', 'int', None, 6),
    ),
    'StablehloCaseOptions': (
        ('branch_subgraph_indices', '[int]', None, 0),
    ),
    'StablehloRngBitGeneratorOptions': (
        ('algorithm', 'RngAlgorithm', None, 0),
    ),
    'Conv2DOptions': (
        ('padding', 'Padding', None, 0),
        ('stride_w', 'int', None, 1),
        ('stride_h', 'int', None, 2),
        ('fused_activation_function', 'ActivationFunctionType', None, 3),
        ('dilation_w_factor', 'int', '1', 4),
        ('dilation_h_factor', 'int', '1', 5),
        ('quantized_bias_type', 'TensorType', None, 6),
    ),
    'Conv3DOptions': (
        ('padding', 'Padding', None, 0),
        ('stride_d', 'int', None, 1),
        ('stride_w', 'int', None, 2),
        ('stride_h', 'int', None, 3),
        ('fused_activation_function', 'ActivationFunctionType', None, 4),
        ('dilation_d_factor', 'int', '1', 5),
        ('dilation_w_factor', 'int', '1', 6),
        ('dilation_h_factor', 'int', '1', 7),
    ),
    'Pool2DOptions': (
        ('padding', 'Padding', None, 0),
        ('stride_w', 'int', None, 1),
        ('stride_h', 'int', None, 2),
        ('filter_width', 'int', None, 3),
        ('filter_height', 'int', None, 4),
        ('fused_activation_function', 'ActivationFunctionType', None, 5),
    ),
    'DepthwiseConv2DOptions': (
        ('padding', 'Padding', None, 0),
        ('stride_w', 'int', None, 1),
        ('stride_h', 'int', None, 2),
        ('depth_multiplier', 'int', None, 3),
        ('fused_activation_function', 'ActivationFunctionType', None, 4),
        ('dilation_w_factor', 'int', '1', 5),
        ('dilation_h_factor', 'int', '1', 6),
    ),
    'ConcatEmbeddingsOptions': (
        ('num_channels', 'int', None, 0),
        ('num_columns_per_channel', '[int]', None, 1),
        ('embedding_dim_per_channel', '[int]', None, 2),
    ),
    'LSHProjectionOptions': (
        ('type', 'LSHProjectionType', None, 0),
    ),
    'SVDFOptions': (
        ('rank', 'int', None, 0),
        ('fused_activation_function', 'ActivationFunctionType', None, 1),
        ('asymmetric_quantize_inputs', 'bool', None, 2),
    ),
    'RNNOptions': (
        ('fused_activation_function', 'ActivationFunctionType', None, 0),
        ('asymmetric_quantize_inputs', 'bool', None, 1),
    ),
    'SequenceRNNOptions': (
        ('time_major', 'bool', None, 0),
        ('fused_activation_function', 'ActivationFunctionType', None, 1),
        ('asymmetric_quantize_inputs', 'bool', None, 2),
    ),
    'BidirectionalSequenceRNNOptions': (
        ('time_major', 'bool', None, 0),
        ('fused_activation_function', 'ActivationFunctionType', None, 1),
        ('merge_outputs', 'bool', None, 2),
        ('asymmetric_quantize_inputs', 'bool', None, 3),
    ),
    'FullyConnectedOptions': (
        ('fused_activation_function', 'ActivationFunctionType', None, 0),
        ('weights_format', 'FullyConnectedOptionsWeightsFormat', 'DEFAULT', 1),
        ('keep_num_dims', 'bool', None, 2),
        ('asymmetric_quantize_inputs', 'bool', None, 3),
        ('quantized_bias_type', 'TensorType', None, 4),
    ),
    'SoftmaxOptions': (
        ('beta', 'float', None, 0),
    ),
    'ConcatenationOptions': (
        ('axis', 'int', None, 0),
        ('fused_activation_function', 'ActivationFunctionType', None, 1),
    ),
    'AddOptions': (
        ('fused_activation_function', 'ActivationFunctionType', None, 0),
        ('pot_scale_int16', 'bool', 'true', 1),
    ),
    'MulOptions': (
        ('fused_activation_function', 'ActivationFunctionType', None, 0),
    ),
    'L2NormOptions': (
        ('fused_activation_function', 'ActivationFunctionType', None, 0),
    ),
    'LocalResponseNormalizationOptions': (
        ('radius', 'int', None, 0),
        ('bias', 'float', None, 1),
        ('alpha', 'float', None, 2),
        ('beta', 'float', None, 3),
    ),
    'LSTMOptions': (
        ('fused_activation_function', 'ActivationFunctionType', None, 0),
        ('cell_clip', 'float', None, 1),
        ('proj_clip', 'float', None, 2),
        ('kernel_type', 'LSTMKernelType', 'FULL', 3),
        ('asymmetric_quantize_inputs', 'bool', None, 4),
    ),
    'UnidirectionalSequenceLSTMOptions': (
        ('fused_activation_function', 'ActivationFunctionType', None, 0),
        ('cell_clip', 'float', None, 1),
        ('proj_clip', 'float', None, 2),
        ('time_major', 'bool', None, 3),
        ('asymmetric_quantize_inputs', 'bool', None, 4),
        ('diagonal_recurrent_tensors', 'bool', None, 5),
    ),
    'BidirectionalSequenceLSTMOptions': (
        ('fused_activation_function', 'ActivationFunctionType', None, 0),
        ('cell_clip', 'float', None, 1),
        ('proj_clip', 'float', None, 2),
        ('merge_outputs', 'bool', None, 3),
        ('time_major', 'bool', 'true', 4),
        ('asymmetric_quantize_inputs', 'bool', None, 5),
    ),
    'ResizeBilinearOptions': (
        ('new_height', 'int', None, 0),  # deprecated
        ('new_width', 'int', None, 1),  # deprecated
        ('align_corners', 'bool', None, 2),
        ('half_pixel_centers', 'bool', None, 3),
    ),
    'ResizeNearestNeighborOptions': (
        ('align_corners', 'bool', None, 0),
        ('half_pixel_centers', 'bool', None, 1),
    ),
    'CallOptions': (
        ('subgraph', 'uint', None, 0),
    ),
    'PadOptions': (
    ),
    'PadV2Options': (
    ),
    'ReshapeOptions': (
        ('new_shape', '[int]', None, 0),
    ),
    'SpaceToBatchNDOptions': (
    ),
    'BatchToSpaceNDOptions': (
    ),
    'SkipGramOptions': (
        ('ngram_size', 'int', None, 0),
        ('max_skip_size', 'int', None, 1),
        ('include_all_ngrams', 'bool', None, 2),
    ),
    'SpaceToDepthOptions': (
        ('block_size', 'int', None, 0),
    ),
    'DepthToSpaceOptions': (
        ('block_size', 'int', None, 0),
    ),
    'SubOptions': (
        ('fused_activation_function', 'ActivationFunctionType', None, 0),
        ('pot_scale_int16', 'bool', 'true', 1),
    ),
    'DivOptions': (
        ('fused_activation_function', 'ActivationFunctionType', None, 0),
    ),
    'TopKV2Options': (
    ),
    'EmbeddingLookupSparseOptions': (
        ('combiner', 'CombinerType', None, 0),
    ),
    'GatherOptions': (
        ('axis', 'int', None, 0),
        ('batch_dims', 'int', '0', 1),
    ),
    'TransposeOptions': (
    ),
    'ExpOptions': (
    ),
    'CosOptions': (
    ),
    'ReducerOptions': (
        ('keep_dims', 'bool', None, 0),
    ),
    'SqueezeOptions': (
        ('squeeze_dims', '[int]', None, 0),
    ),
    'SplitOptions': (
        ('num_splits', 'int', None, 0),
    ),
    'SplitVOptions': (
        ('num_splits', 'int', None, 0),
    ),
    'StridedSliceOptions': (
        ('begin_mask', 'int', None, 0),
        ('end_mask', 'int', None, 1),
        ('ellipsis_mask', 'int', None, 2),
        ('new_axis_mask', 'int', None, 3),
        ('shrink_axis_mask', 'int', None, 4),
        ('offset', 'bool', None, 5),
    ),
    'LogSoftmaxOptions': (
    ),
    'CastOptions': (
        ('in_data_type', 'TensorType', None, 0),
        ('out_data_type', 'TensorType', None, 1),
    ),
    'DequantizeOptions': (
    ),
    'MaximumMinimumOptions': (
    ),
    'TileOptions': (
    ),
    'ArgMaxOptions': (
        ('output_type', 'TensorType', None, 0),
    ),
    'ArgMinOptions': (
        ('output_type', 'TensorType', None, 0),
    ),
    'GreaterOptions': (
    ),
    'GreaterEqualOptions': (
    ),
    'LessOptions': (
    ),
    'LessEqualOptions': (
    ),
    'NegOptions': (
    ),
    'SelectOptions': (
    ),
    'SliceOptions': (
    ),
    'TransposeConvOptions': (
        ('padding', 'Padding', None, 0),
        ('stride_w', 'int', None, 1),
        ('stride_h', 'int', None, 2),
        ('fused_activation_function', 'ActivationFunctionType', 'NONE', 3),
        ('quantized_bias_type', 'TensorType', None, 4),
    ),
    'ExpandDimsOptions': (
    ),
    'SparseToDenseOptions': (
        ('validate_indices', 'bool', None, 0),
    ),
    'EqualOptions': (
    ),
    'NotEqualOptions': (
    ),
    'ShapeOptions': (
        ('out_type', 'TensorType', None, 0),
    ),
    'RankOptions': (
    ),
    'PowOptions': (
    ),
    'FakeQuantOptions': (
        ('min', 'float', None, 0),
        ('max', 'float', None, 1),
        ('num_bits', 'int', None, 2),
        ('narrow_range', 'bool', None, 3),
    ),
    'PackOptions': (
        ('values_count', 'int', None, 0),
        ('axis', 'int', None, 1),
    ),
    'LogicalOrOptions': (
    ),
    'OneHotOptions': (
        ('axis', 'int', None, 0),
    ),
    'AbsOptions': (
    ),
    'HardSwishOptions': (
    ),
    'LogicalAndOptions': (
    ),
    'LogicalNotOptions': (
    ),
    'UnpackOptions': (
        ('num', 'int', None, 0),
        ('axis', 'int', None, 1),
    ),
    'FloorDivOptions': (
    ),
    'SquareOptions': (
    ),
    'ZerosLikeOptions': (
    ),
    'FillOptions': (
    ),
    'FloorModOptions': (
    ),
    'RangeOptions': (
    ),
    'LeakyReluOptions': (
        ('alpha', 'float', None, 0),
    ),
    'SquaredDifferenceOptions': (
    ),
    'MirrorPadOptions': (
        ('mode', 'MirrorPadMode', None, 0),
    ),
    'UniqueOptions': (
        ('idx_out_type', 'TensorType', 'INT32', 0),
    ),
    'ReverseV2Options': (
    ),
    'AddNOptions': (
    ),
    'GatherNdOptions': (
    ),
    'WhereOptions': (
    ),
    'ReverseSequenceOptions': (
        ('seq_dim', 'int', None, 0),
        ('batch_dim', 'int', '0', 1),
    ),
    'MatrixDiagOptions': (
    ),
    'QuantizeOptions': (
    ),
    'MatrixSetDiagOptions': (
    ),
    'IfOptions': (
        ('then_subgraph_index', 'int', None, 0),
        ('else_subgraph_index', 'int', None, 1),
    ),
    'CallOnceOptions': (
        ('init_subgraph_index', 'int', None, 0),
    ),
    'WhileOptions': (
        ('cond_subgraph_index', 'int', None, 0),
        ('body_subgraph_index', 'int', None, 1),
    ),
    'NonMaxSuppressionV4Options': (
    ),
    'NonMaxSuppressionV5Options': (
    ),
    'ScatterNdOptions': (
    ),
    'SelectV2Options': (
    ),
    'DensifyOptions': (
    ),
    'SegmentSumOptions': (
    ),
    'BatchMatMulOptions': (
        ('adj_x', 'bool', None, 0),
        ('adj_y', 'bool', None, 1),
        ('asymmetric_quantize_inputs', 'bool', None, 2),
    ),
    'CumsumOptions': (
        ('exclusive', 'bool', None, 0),
        ('reverse', 'bool', None, 1),
    ),
    'BroadcastToOptions': (
    ),
    'Rfft2dOptions': (
    ),
    'HashtableOptions': (
        ('table_id', 'int', None, 0),
        ('key_dtype', 'TensorType', None, 1),
        ('value_dtype', 'TensorType', None, 2),
    ),
    'HashtableFindOptions': (
    ),
    'HashtableImportOptions': (
    ),
    'HashtableSizeOptions': (
    ),
    'VarHandleOptions': (
        ('container', 'string', None, 0),
        ('shared_name', 'string', None, 1),
    ),
    'ReadVariableOptions': (
    ),
    'AssignVariableOptions': (
    ),
    'ReduceWindowOptions': (  # deprecated in schema.fbs (REDUCE_WINDOW, BuiltinOptions2 member 20); still read
        ('reduce_function', 'ReduceWindowFunction', None, 0),
    ),
    'RandomOptions': (
        ('seed', 'long', None, 0),
        ('seed2', 'long', None, 1),
    ),
    'BucketizeOptions': (
        ('boundaries', '[float]', None, 0),
    ),
    'GeluOptions': (
        ('approximate', 'bool', None, 0),
    ),
    'DynamicUpdateSliceOptions': (
    ),
    'UnsortedSegmentProdOptions': (
    ),
    'UnsortedSegmentMaxOptions': (
    ),
    'UnsortedSegmentSumOptions': (
    ),
    'ATan2Options': (
    ),
    'UnsortedSegmentMinOptions': (
    ),
    'SignOptions': (
    ),
    'BitcastOptions': (
    ),
    'BitwiseXorOptions': (
    ),
    'RightShiftOptions': (
    ),
    'DilateOptions': (
    ),
    'OperatorCode': (
        ('deprecated_builtin_code', 'byte', None, 0),
        ('custom_code', 'string', None, 1),
        ('version', 'int', '1', 2),
        ('builtin_code', 'BuiltinOperator', None, 3),
    ),
    'StableHLOCompositeOptions': (
        ('name', 'string', None, 0),
        ('decomposition_subgraph_index', 'int32', None, 1),
        ('composite_attributes', '[ubyte]', None, 2),
        ('composite_attributes_format', 'CustomOptionsFormat', None, 3),
        ('version', 'int32', None, 4),
    ),
    'StablehloShiftLeftOptions': (
    ),
    'Operator': (
        ('opcode_index', 'uint', None, 0),
        ('inputs', '[int]', None, 1),
        ('outputs', '[int]', None, 2),
        ('builtin_options_type', '@BuiltinOptions', None, 3),
        ('builtin_options', 'BuiltinOptions', None, 4),
        ('custom_options', '[ubyte]', None, 5),
        ('custom_options_format', 'CustomOptionsFormat', None, 6),
        ('mutating_variable_inputs', '[bool]', None, 7),
        ('intermediates', '[int]', None, 8),
        ('large_custom_options_offset', 'ulong', None, 9),
        ('large_custom_options_size', 'ulong', None, 10),
        ('builtin_options_2_type', '@BuiltinOptions2', None, 11),
        ('builtin_options_2', 'BuiltinOptions2', None, 12),
        ('debug_metadata_index', 'int', '-1', 13),
    ),
    'SubGraph': (
        ('tensors', '[Tensor]', None, 0),
        ('inputs', '[int]', None, 1),
        ('outputs', '[int]', None, 2),
        ('operators', '[Operator]', None, 3),
        ('name', 'string', None, 4),
        ('debug_metadata_index', 'int', '-1', 5),
    ),
    'Buffer': (
        ('data', '[ubyte]', None, 0),
        ('offset', 'ulong', None, 1),
        ('size', 'ulong', None, 2),
    ),
    'ExternalBufferGroup': (
        ('name', 'string', None, 0),
    ),
    'ExternalBuffer': (
        ('id', 'uint', None, 0),
        ('group', 'uint', None, 1),
        ('offset', 'ulong', None, 2),
        ('length', 'ulong', None, 3),
        ('packing', 'string', None, 4),
    ),
    'Metadata': (
        ('name', 'string', None, 0),
        ('buffer', 'uint', None, 1),
    ),
    'TensorMap': (
        ('name', 'string', None, 0),
        ('tensor_index', 'uint', None, 1),
    ),
    'SignatureDef': (
        ('inputs', '[TensorMap]', None, 0),
        ('outputs', '[TensorMap]', None, 1),
        ('signature_key', 'string', None, 2),
        ('deprecated_tag', 'string', None, 3),  # deprecated
        ('subgraph_index', 'uint', None, 4),
    ),
    'Model': (
        ('version', 'uint', None, 0),
        ('operator_codes', '[OperatorCode]', None, 1),
        ('subgraphs', '[SubGraph]', None, 2),
        ('description', 'string', None, 3),
        ('buffers', '[Buffer]', None, 4),
        ('metadata_buffer', '[int]', None, 5),
        ('metadata', '[Metadata]', None, 6),
        ('signature_defs', '[SignatureDef]', None, 7),
        ('external_buffer_groups', '[ExternalBufferGroup]', None, 8),
        ('external_buffers', '[ExternalBuffer]', None, 9),
    ),
}
# fmt: on

BUILTIN_OPERATOR_NAMES: dict[int, str] = dict(ENUMS["BuiltinOperator"][1])
BUILTIN_OPERATOR_CODES: dict[str, int] = {name: code for code, name in BUILTIN_OPERATOR_NAMES.items()}
CUSTOM_CODE = BUILTIN_OPERATOR_CODES["CUSTOM"]


def enum_name(enum: str, value: int) -> str:
    """An enum value's schema name, or "<Enum>_<value>" for a value this schema does not know."""
    return ENUMS[enum][1].get(value, f"{enum}_{value}")


def enum_value(enum: str, name: str) -> int:
    for value, n in ENUMS[enum][1].items():
        if n == name:
            return value
    raise KeyError(f"{enum} has no value {name}")
