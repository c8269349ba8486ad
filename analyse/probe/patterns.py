"""Data lists of message patterns (regular expressions, searched line by line)."""

# Warnings/log lines a backend emits when an operator runs on the CPU instead.
# torch_npu (npu_cpu_fallback, VariableFallbackKernel) prints, once per operator
# and process:
#   CAUTION: The operator 'aten::xxx' is not currently supported on the NPU
#   backend and will fall back to run on the CPU. This may have performance
#   implications.
# MPS and other PrivateUse1 backends use the same wording.
FALLBACK_PATTERNS = (
    r"is not currently supported on the \w+ backend and will fall back to run on the CPU",
    r"will fall ?back to (?:run on )?(?:the )?CPU",
    r"[Ff]all(?:ing)? ?back to (?:the )?CPU",
    r"\bCPU fallback\b",
    r"npu_cpu_fallback",
)

# An error on the device that means "this dtype is not supported" rather than a
# broken operator.
DTYPE_ERROR_PATTERNS = (
    r"not implemented for '(?:Half|BFloat16|Float|Double|ComplexHalf|ComplexFloat|ComplexDouble|Bool|Long|Int|Short|Char|Byte|Float8\w*)'",
    r"[Uu]nsupported (?:data ?type|dtype|scalar ?type)",
    r"(?:dtype|data ?type|[Ss]calar ?[Tt]ype)\s*\S*\s+(?:is )?not supported",
    r"does not support (?:the )?(?:dtype|data ?type|Half|BFloat16|bfloat16|float16|complex|double|float64)",
    r"not supported (?:for|with) (?:the )?(?:dtype|data ?type|Half|BFloat16|bfloat16|float16|complex|double)",
    r"DT_(?:BF16|FLOAT16|DOUBLE|COMPLEX\d*|BOOL|INT\d+|UINT\d+)\b.*not support",
)

# Operators whose values are random or uninitialised: only shapes/dtypes are compared.
NONDETERMINISTIC_PATTERNS = (
    r"dropout", r"rrelu", r"bernoulli", r"multinomial", r"\bnormal", r"normal_\b",
    r"\.rand", r"rand(?:n|int|perm)?(?:_like)?$", r"uniform", r"exponential", r"cauchy",
    r"geometric", r"log_normal", r"empty", r"poisson", r"random_?$",
)
