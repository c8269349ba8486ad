"""Limitations texts of the Ascend native-API support lists: English text and structured checks.

Used by ``tools/build_knowledge.py`` only (never at run time).

English: the official English compact tables (``native_api_docs/<tag>/en/pytorch_<V>/*.md``)
are paired row by row with the Chinese tables of the same torch version and tag. A Chinese
limitations text (of any torch version) gets the English text when it is identical (after
normalising markup: bullets, backticks, ``<term>``, ``<br>``) to a Chinese text that has an
official translation, or, line by line, when every line has an official translation. Lines
without one are rendered in English from their parsed check (``input: supports fp32 only``),
or from a short list of translations of frequent lines kept here (``LINE_TRANSLATIONS``,
marked ``translation: npu-analyse`` in the data). The Chinese original stays as ``evidence``.

Checks: a line that states a limit on an argument, a value, a dtype or a number of dimensions
becomes a check (a small dict, see ``parse_line``); lines that do not are the remainder, kept
as text.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

CJK = re.compile(r"[\u4e00-\u9fff]")

# dtype words of the docs -> canonical short names
DTYPES = {
    "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16", "half": "fp16", "fp32": "fp32", "float32": "fp32",
    "float": "fp32", "fp64": "fp64", "float64": "fp64", "double": "fp64", "uint8": "uint8", "int8": "int8", "int16": "int16",
    "int32": "int32", "int64": "int64", "bool": "bool", "complex32": "complex32", "complex64": "complex64",
    "complex128": "complex128", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "hifloat8": "hifloat8",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2", "qint8": "qint8", "quint8": "quint8", "qint32": "qint32",
    "int4": "int4",
}
_DT = "(?:" + "|".join(sorted(map(re.escape, DTYPES), key=len, reverse=True)) + ")"
_DTLIST = rf"{_DT}(?:\s*(?:[，,、/]|和|以及)\s*{_DT})*"
_PARAM = r"[A-Za-z_][A-Za-z0-9_]*"
_PARAMS = rf"{_PARAM}(?:\s*(?:[，,、]|和)\s*{_PARAM})*"

# Translations of frequent lines that the official English tables do not cover (no English row
# for that text). Written for npu-analyse; the data marks texts that use them.
LINE_TRANSLATIONS = {
    "可能回退至CPU执行": "May fall back to CPU execution",
    "在某些情况下可能回退至CPU执行": "May fall back to CPU execution in some cases",
    "回退至CPU执行": "Falls back to CPU execution",
    "当前仅支持推理场景，不支持训练场景": "Currently supports inference only, not training",
    "未设置device时，调用该接口会隐式地初始化当前device（默认0卡）":
        "If no device is set, calling this API implicitly initialises the current device (device 0 by default)",
    "当输入为超过16,777,216（即224）的int32类型时，精度会有损失":
        "int32 inputs above 16,777,216 (2^24) lose precision",
    "当input为超过16,777,216（即224）的int32类型时，精度会有损失":
        "int32 inputs above 16,777,216 (2^24) lose precision",
    "输入范围为1-99": "Input range is 1-99",
    "支持Named Tensor": "Supports Named Tensor",
    "不支持变长序列输入": "Does not support variable-length (packed) sequence input",
    "不支持double数据类型": "Does not support the double data type",
    "不支持稀疏张量": "Does not support sparse tensors",
    "依赖稀疏tensor": "Depends on sparse tensors",
    "不支持标量tensor": "Does not support scalar tensors",
    "不支持nan场景": "Does not support NaN inputs",
    "两个输入的shape要保持一致": "The two inputs must have the same shape",
    "输入最大支持6维": "Inputs have at most 6 dimensions",
    "目前嵌套张量只支持创建，不支持其他操作": "Nested tensors can only be created; other operations are not supported",
    "需通过torch.compile获取SymInt": "SymInt is obtained through torch.compile",
    "eps参数需大于0": "eps must be greater than 0",
    "int64类型不支持三个tensor同时广播": "int64 does not support broadcasting three tensors at once",
    "不支持jit_compile=True的场景": "Does not support jit_compile=True",
    "不支持NPU融合优化器对象": "Does not support NPU fused optimizer objects",
    "导出文件内容为json格式": "The exported file is in JSON format",
    "weights维度需与input维度一致": "weights must have the same number of dimensions as input",
    "index维度需与input维度一致": "index must have the same number of dimensions as input",
    "index的维度数需与input的维度数一致": "index must have the same number of dimensions as input",
    "在输入x为六维以上时可能会出现性能下降问题": "Performance may drop for inputs with more than six dimensions",
    "在输入x为六维以上时可能会出现性能下降": "Performance may drop for inputs with more than six dimensions",
    "输入张量在重复后得到输出，输出中元素个数需小于$2^{22}$": "The output (the repeated input) must have fewer than 2^22 elements",
    "在输入包含0的情况下，输出中可能会包含正0和负0，而非只输出一个0": "If the input contains 0, the output may contain both +0 and -0",
    "eps取值大于1时输出为nan，eps取值为1时输出为inf": "eps > 1 gives nan, eps = 1 gives inf",
    "return_indices为True时，返回的argmax的数据类型为int32": "With return_indices=True the returned argmax indices are int32",
    "target中的每个元素值应大于等于0且小于input的类别数": "Every target value must be >= 0 and less than the number of classes of input",
    "correction参数值不能超过int32的最大值": "correction must not exceed the int32 maximum",
    "取值范围[-65504,65504]": "Value range [-65504, 65504]",
    "不支持dtype参数": "Does not support the dtype parameter",
    "不支持scale_factor": "Does not support scale_factor",
    "不支持proj_size参数": "Does not support the proj_size parameter",
    "不支持dropout参数": "Does not support the dropout parameter",
    "入参input不支持2维": "The input parameter does not support 2 dimensions",
    "针对Ascend 950DT，由于硬件差异，在索引存在重复的情况下，精度可能和Atlas A2 训练系列产品/Atlas A3 训练系列产品存在差异":
        "Ascend 950DT: with duplicate indices, precision may differ from Atlas A2/A3 training products (hardware difference)",
    "针对Ascend 950DT，由于硬件差异，在索引存在重复的情况下，精度可能和Atlas A2 训练系列产品/Atlas A3 训练系列产品存在差异，例如：":
        "Ascend 950DT: with duplicate indices, precision may differ from Atlas A2/A3 training products (hardware difference), for example:",
    "优化器在启动foreach的情况下（foreach=None或foreach=True），当被优化的参数分组过多时由于foreach算子的特性会导致性能下降。这种情况建议设置为foreach=False，例如：":
        "With foreach enabled (foreach=None or True) and many parameter groups, the optimizer slows down; set foreach=False, for example:",
    "优化器在启动foreach的情况下（foreach=None或foreach=True），当被优化的参数分组过多时由于foreach算子的特性会导致性能下降。这种情况建议设置为foreach=False":
        "With foreach enabled (foreach=None or True) and many parameter groups, the optimizer slows down; set foreach=False",
    "针对Ascend 950DT，由于底层实现限制，\"stable\"仅支持True，若设置为False，执行时会被自动修改为True":
        "Ascend 950DT: stable supports only True; False is changed to True at run time",
    "针对Ascend 950DT，由于底层实现限制，stable仅支持True，若设置为False，执行时会被自动修改为True":
        "Ascend 950DT: stable supports only True; False is changed to True at run time",
    "Atlas A3 训练系列产品额外支持bf16": "Atlas A3 training products also support bf16",
    "input仅支持Named Tensor": "input: supports Named Tensor",
    "world_size不支持3，5，6，7": "world_size does not support 3, 5, 6, 7",
    "dim需小于等于8192": "dim must be at most 8192",
    "由于硬件差异，npu topk索引结果与GPU/CPU不一致。当前NPU仅支持返回sorted为true的计算结果":
        "Because of hardware differences NPU topk indices differ from GPU/CPU; the NPU returns sorted=True results only",
    "当前NPU上部分接口暂不支持double类型，出于兼容性考虑默认返回fp32，后续完成支持后将正常返回fp64":
        "Some NPU APIs do not support double yet: fp32 is returned for compatibility (fp64 once supported)",
    "针对Ascend 950DT，输入为fp16时，精度可能和Atlas A2 训练系列产品/Atlas A3 训练系列产品存在差异":
        "Ascend 950DT: with fp16 input, precision may differ from Atlas A2/A3 training products",
    "针对Ascend 950DT，当logits数值特别大时，精度可能和Atlas A2 训练系列产品/Atlas A3 训练系列产品存在差异":
        "Ascend 950DT: with very large logits, precision may differ from Atlas A2/A3 training products",
    "通过环境变量TORCH_NPU_DEVICE_CAPABILITY配置torch_npu.npu.get_device_capability()的返回值，仅用于兼容原生PyTorch，不代表NPU硬件实际能力":
        "The value returned by torch_npu.npu.get_device_capability() is set with the TORCH_NPU_DEVICE_CAPABILITY environment variable, "
        "for compatibility with PyTorch only; it does not describe the NPU hardware",
    "仅支持name、total_memory、L2_cache_size、cube_core_num和vector_core_num属性，原cuda上支持的其余属性均返回空字段":
        "Only the name, total_memory, L2_cache_size, cube_core_num and vector_core_num attributes are filled; the other CUDA attributes are empty",
    "NPU对应接口为Tensor.npu，其memory_format参数仅支持传入torch.contiguous_format":
        "The NPU counterpart is Tensor.npu; its memory_format accepts only torch.contiguous_format",
    "当pg_options参数传入类型为torch_npu._C._distributed_c10d.ProcessGroupHCCL.Options()时，可通过配置该变量的hccl_config属性控制HCCL通信域缓冲区大小。具体示例可参考《PyTorch 训练模型迁移调优指南》的“[hccl_buffer_size](https://www.hiascend.com/document/detail/zh/ModelZoo/traditional_model_train/PyTorch/docs/zh/performance_tuning/performance_tuning_methods/communication_basics_overview.md#hccl_buffer_size)”章节。可通过配置变量hccl_config的group_name字段设置HCCL通信域的通信组自定义名称，取值为长度不超过32的字符串":
        "When pg_options is a torch_npu._C._distributed_c10d.ProcessGroupHCCL.Options(), its hccl_config attribute sets the HCCL "
        "buffer size (see \"[hccl_buffer_size](https://www.hiascend.com/document/detail/zh/ModelZoo/traditional_model_train/PyTorch/docs/zh/"
        "performance_tuning/performance_tuning_methods/communication_basics_overview.md#hccl_buffer_size)\" in the PyTorch migration and "
        "tuning guide), and its group_name field names the HCCL communication group (a string of at most 32 characters)",
    "设置torch.use_deterministic_algorithms时，PyTorch默认会填充未初始化内存（torch.utils.deterministic.fill_uninitialized_memory默认值为True），而TorchNPU默认不填充。如需填充生效，需手动将torch.utils.deterministic.fill_uninitialized_memory设置为True":
        "With torch.use_deterministic_algorithms set, PyTorch fills uninitialised memory by default "
        "(torch.utils.deterministic.fill_uninitialized_memory defaults to True) but torch_npu does not; "
        "set torch.utils.deterministic.fill_uninitialized_memory = True to fill it",
    "通过设置torch_npu.npu.use_compatible_impl(True)，保证与PyTorch同名接口在内存一致性上对齐，例如：":
        "Call torch_npu.npu.use_compatible_impl(True) to align memory behaviour with the PyTorch API of the same name, for example:",
    "query、key、value仅支持bf16、fp16和fp32。所有参数输入均符合以下约束": "query, key, value support bf16, fp16 and fp32 only; all inputs must meet the constraints below",
    "**约束**：": "Constraints:",
    "**约束**:": "Constraints:",
    "所有参数输入符合规格：": "All inputs must meet these specifications:",
    "输入query、key、value的N：batch size，当前只支持[N，head_num, S(L), E(Ev)]的排布方式，取值范围1~2K":
        "N (batch size) of query, key, value: only the [N, head_num, S(L), E(Ev)] layout is supported; range 1-2K",
    "输入query的head num和key/value的head num必须成比例关系，即Nq/Nkv必须是非0整数，取值范围1~256":
        "The head count of query must be a non-zero integer multiple of that of key/value (Nq/Nkv); range 1-256",
    "输入query的L：Target sequence length，取值范围1~512K": "L (target sequence length) of query: range 1-512K",
    "输入key、value的S：Source sequence length，取值范围1~512K": "S (source sequence length) of key, value: range 1-512K",
    "输入query、key、value的E：Embedding dimension of the query and key，取值范围1~512": "E (embedding dimension of query and key): range 1-512",
    "输入value的Ev：Embedding dimension of the value，必须与E相等": "Ev (embedding dimension of value) must equal E",
    "输入attn_mask：当前支持[N, 1, L, S]、[N, head_num, L, S]、[1, 1, L, S]、[L, S]，以及可广播到[N, head_num, L, S]的bool类型mask，例如[L, 1]、[1, S]、[1, 1]等排布方式":
        "attn_mask: [N, 1, L, S], [N, head_num, L, S], [1, 1, L, S], [L, S] and bool masks broadcastable to [N, head_num, L, S] "
        "(e.g. [L, 1], [1, S], [1, 1]) are supported",
    "在开启is_causal计算时，attn_mask必须为None；不开启is_causal时，若attn_mask输入有效数据，输入数据类型必须是bool类型":
        "With is_causal=True attn_mask must be None; without is_causal a given attn_mask must be bool",
    "输入query、key、value的数据类型为bf16、fp16、fp32": "query, key, value dtypes: bf16, fp16, fp32",
    "通过设置torch_npu.npu.use_compatible_impl(True)，支持按SDPA后端选择上下文指定MATH后端，例如：":
        "With torch_npu.npu.use_compatible_impl(True) the SDPA backend context can select the MATH backend, for example:",
    "与原接口除了规格限制之外差异点：": "Differences from the PyTorch API besides the limits above:",
    "NPU的随机算法部分用DSA硬件实现，算法在DSA引擎固化与GPU算法实现存在差异，导致dropout功能和GPU结果不一致":
        "NPU random numbers come from the DSA hardware engine, so dropout results differ from the GPU",
    "当前接口支持输入query的head num和key/value的head num不等长，而原生PyTorch接口不支持":
        "Unlike PyTorch, query and key/value may have different head counts",
    "不支持多进程加载NPU数据，num_workers仅支持0":
        "Loading NPU data in several processes is not supported: num_workers supports only 0",
}


def _load_translations() -> dict:
    """The lines of tools/translations.yaml (English renderings by npu-analyse, with provenance there)."""
    import yaml

    doc = yaml.safe_load((Path(__file__).resolve().parent / "translations.yaml").read_text(encoding="utf-8"))
    return dict(doc["lines"]), dict(doc.get("code_lines") or {})


_LINES, CODE_TRANSLATIONS = _load_translations()
LINE_TRANSLATIONS.update(_LINES)

# full-width punctuation that English text must not keep (2.1.0 English table: "bool；Dont support ...")
_FULL_WIDTH = {"；": "; ", "：": ": ", "，": ", ", "（": " (", "）": ")", "。": ". ", "、": ", ", "“": '"', "”": '"'}


def _code_english(block: str) -> str:
    """A code block with its Chinese comment lines replaced by their English (tools/translations.yaml code_lines)."""
    out = []
    for ln in block.split("\n"):
        key = ln.strip()
        out.append(ln[: len(ln) - len(ln.lstrip())] + CODE_TRANSLATIONS[key] if key in CODE_TRANSLATIONS else ln)
    return "\n".join(out)


def ascii_punctuation(text: str) -> str:
    for a, b in _FULL_WIDTH.items():
        text = text.replace(a, b)
    return re.sub(r" {2,}", " ", text).replace(" )", ")")


# --------------------------------------------------------------------------- markdown tables


def table_rows(path: Path) -> dict[str, str]:
    """``|API|supported|limitations|`` rows of a compact doc table -> {api: limitations cell}."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 3 or set(cells[1]) <= set("-: ") or cells[0] in ("API名称", "API Name"):
            continue
        out.setdefault(cells[0], cells[2])
    return out


def norm(line: str) -> str:
    """Normalised form of one limitations line (markup and trailing punctuation removed)."""
    s = re.sub(r"</?term>", "", line).replace("`", "").replace("\\*", "*")
    s = re.sub(r"^\s*[-*]\s+", "", s)
    s = s.strip().rstrip("。.;；").strip()
    return re.sub(r"\s+", " ", s)


def text_lines(text: str) -> list[tuple[str, str]]:
    """Split a limitations text into ("text", line) and ("code", block) items."""
    out: list[tuple[str, str]] = []
    code: list[str] | None = None
    for raw in text.replace("<br>", "\n").split("\n"):
        if raw.strip().startswith("```"):
            if code is None:
                code = [raw.strip()]
            else:
                code.append("```")
                out.append(("code", "\n".join(code)))
                code = None
            continue
        if code is not None:
            code.append(raw)
            continue
        if raw.strip():
            out.append(("text", raw))
    if code is not None:
        out.append(("code", "\n".join(code + ["```"])))
    return out


_ASCII = re.compile(r"[A-Za-z0-9_.]+")


def _key(line: str) -> str:
    """Matching key: list punctuation and spaces do not matter (、 vs ，)."""
    return re.sub(r"[\s、，,]+", "，", line).strip("，")


class Translator:
    """Official Chinese -> English pairs of limitations texts and lines."""

    def _near(self, n: str) -> str | None:
        """The official English of a line that differs from ``n`` only in a few Chinese characters
        (same code names and numbers, similarity >= 0.9): upstream rewords without changing facts."""
        import difflib

        tokens = _ASCII.findall(n)
        best, best_ratio = None, 0.9
        for zh in sorted(self.lines):
            if _ASCII.findall(zh) != tokens or abs(len(zh) - len(n)) > max(4, len(n) // 10):
                continue
            r = difflib.SequenceMatcher(None, zh, n).ratio()
            if r >= best_ratio:
                best, best_ratio = self.lines[zh], r
        return best

    def __init__(self) -> None:
        self.full: dict[str, str] = {}
        self.lines: dict[str, str] = {}
        self.pairs = 0
        self.sources: list[str] = []
        self._votes: dict[str, dict[str, int]] = {}

    def add_tables(self, zh_dir: Path, en_dir: Path, source: str) -> None:
        for zf in sorted(zh_dir.glob("*.md")):
            ef = en_dir / zf.name
            if not ef.is_file():
                continue
            zrows, erows = table_rows(zf), table_rows(ef)
            for api, zlim in zrows.items():
                elim = erows.get(api)
                if elim is None or zlim in ("", "-") or elim in ("", "-"):
                    continue
                zl = [norm(x) for x in zlim.split("<br>") if x.strip()]
                el = [x.strip() for x in elim.split("<br>") if x.strip()]
                if CJK.search(" ".join(el)):
                    continue  # untranslated row
                self.pairs += 1
                self.full.setdefault("\n".join(zl), "\n".join(el))
                if len(zl) == len(el):
                    for a, b in zip(zl, el):
                        votes = self._votes.setdefault(a, {})
                        votes[b] = votes.get(b, 0) + 1
        self.sources.append(source)
        # the most frequent official translation of each line (ties: alphabetical)
        self.lines = {a: sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for a, v in self._votes.items()}
        self.__dict__.pop("_keyed", None)

    def _official(self, n: str) -> str | None:
        if n in self.lines:
            return self.lines[n]
        if not hasattr(self, "_keyed"):
            self._keyed = {}
            for zh in sorted(self.lines):
                self._keyed.setdefault(_key(zh), self.lines[zh])
        return self._keyed.get(_key(n))

    def line(self, zh_line: str, check: dict | None) -> tuple[str | None, str]:
        """English for one normalised line, and how it was obtained."""
        n = norm(zh_line)
        if not CJK.search(n):
            return ascii_punctuation(n), "original"
        en = self._official(n)
        if en is not None:
            return en, "official"
        m = re.fullmatch(rf"(?:入参)?(?P<p>{_PARAM})\s*(?:参数)?仅(?P<rest>支持.+)", n)
        if m:
            en = self._official(m.group("rest"))
            if en is not None:
                return f"{m.group('p')}: {en[:1].lower() + en[1:]}", "official"
        if check is not None:
            return render_check(check), "rendered"
        near = self._near(n)
        if near is not None:
            return near, "official-near"
        if n in LINE_TRANSLATIONS:
            return LINE_TRANSLATIONS[n], "npu-analyse"
        m = re.fullmatch(rf"(?:针对)?(?P<prod>(?:Atlas|Ascend)[^：:，]*?)\s*[：:，]\s*(?:(?P<p>{_PARAM})\s*)?(?P<neg>不)?(?:仅)?支持\s*(?P<d>{_DTLIST})", n, flags=re.I)
        if m:
            prod = re.sub(r"\s*训练系列产品", " training products", m.group("prod")).replace("、", ", ").replace("推理系列产品", "inference products")
            who = f"{m.group('p')} " if m.group("p") else ""
            verb = "does not support" if m.group("neg") else "supports only"
            return f"{prod.strip()}: {who}{verb} {', '.join(_dtypes(m.group('d')))}", "npu-analyse"
        return None, "none"


# --------------------------------------------------------------------------- checks

_PRODUCT = re.compile(r"Atlas|Ascend|950|A2|A3|训练系列|推理系列")


def _dtypes(text: str) -> list[str]:
    return sorted({DTYPES[t.lower()] for t in re.findall(_DT, text, flags=re.I)}, key=list(dict.fromkeys(DTYPES.values())).index)


def _values(text: str) -> list | None:
    """Literal values of a `仅支持A和B` / `1或(1,1,1)` list; None when one is not a literal."""
    parts = [p.strip() for p in re.split(r"\s*(?:和|或|、|，|,(?![^()]*\)))\s*", text) if p.strip()]
    out = []
    for p in parts:
        p = p.strip("'\"“”")
        if re.fullmatch(r"torch\.[A-Za-z_][\w.]*", p):
            out.append({"name": p})
            continue
        try:
            v = ast.literal_eval(p)
        except (ValueError, SyntaxError):
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) and p not in ("True", "False", "None"):
                out.append(p)  # a string mode name (tanh, nearest)
                continue
            return None
        if isinstance(v, (int, float, bool, str, tuple)) or v is None:
            out.append(list(v) if isinstance(v, tuple) else v)
        else:
            return None
    return out or None


def parse_line(zh_line: str) -> dict | None:
    """A structured check for one Chinese limitations line, or None (kept as text).

    Kinds:
      {"kind": "dtype", "param"?, "allowed": [...]}       the listed dtypes only
      {"kind": "dtype", "param"?, "forbidden": [...]}     not these dtypes
      {"kind": "arg", "param": p}                         the argument is not supported (only its default works)
      {"kind": "value", "param": p, "allowed": [...]}     only these values
      {"kind": "value", "param": p, "forbidden": [...]}   not these values
      {"kind": "ndim", "param"?, "max"?, "min"?, "forbidden"?}  number of dimensions of an input
      {"kind": "attribute", "allowed": [...]}            only these attributes of the returned object are filled
                                                         (the others are empty on an NPU: ``get_device_properties``)
      {"kind": "result"}                                  only creating the returned object is supported: no other
                                                         operation on it (``torch.nested.nested_tensor``)
    Product-specific lines (Atlas ..., Ascend 950DT) stay text.
    """
    n = norm(zh_line)
    if _PRODUCT.search(n):
        return None
    m = re.fullmatch(rf"(?:仅|只)支持\s*(?P<a>{_PARAMS})\s*属性[，,]\s*原(?:cuda|CUDA)上支持的其余属性均返回空(?:字段|值)?", n)
    if m:
        return {"kind": "attribute", "allowed": re.split(r"\s*(?:[，,、]|和)\s*", m.group("a"))}
    if re.fullmatch(r"(?:目前|当前)?\S{1,12}(?:只|仅)支持创建[，,]\s*不支持其他(?:操作|计算)", n):
        return {"kind": "result"}
    m = re.fullmatch(rf"(?:Only )?supports?\s+(?P<d>{_DTLIST})", n.replace("，", ", "), flags=re.I)
    if m:
        return {"kind": "dtype", "allowed": _dtypes(m.group("d"))}
    m = re.fullmatch(rf"(?:属性)?(?P<a>{_PARAM})\s*(?P<neg>为|非|不为)\s*(?P<v>[A-Za-z0-9_.]+)\s*时，\s*(?P<p>{_PARAM})\s*(?:仅|只)?支持\s*(?P<d>{_DTLIST})", n, flags=re.I)
    if m:
        return {"kind": "dtype", "param": m.group("p"), "allowed": _dtypes(m.group("d")),
                "when": {"param": m.group("a"), ("equals" if m.group("neg") == "为" else "not_equals"): m.group("v")}}
    m = re.fullmatch(rf"(?:当前)?(?:NPU设备)?(?:仅|只)支持(?:设置|传入)?\s*(?P<p>{_PARAM})\s*(?:参数)?(?:为|取值为)\s*(?P<v>[A-Za-z0-9_.()、，,或和 ]+)", n)
    if m:
        vals = _values(m.group("v"))
        if vals is not None:
            return {"kind": "value", "param": m.group("p"), "allowed": vals}
    m = re.fullmatch(r"(?:(?:入参)?input\s*)?(?:仅|只)?支持\s*((?:nearest|linear|bilinear|bicubic|trilinear|area|nearest-exact)(?:\s*[、，,]\s*)?)+", n)
    if m:
        modes = re.findall(r"nearest-exact|nearest|bilinear|bicubic|trilinear|linear|area", n)
        return {"kind": "value", "param": "mode", "allowed": modes}
    m = re.fullmatch(r"不支持\s*(?P<n>\d)\s*维度?的\s*shape", n)
    if m:
        return {"kind": "ndim", "forbidden": [int(m.group("n"))]}
    m = re.fullmatch(rf"(?:(?:入参)?(?P<p>{_PARAMS})\s*(?:参数)?\s*)?(?:仅|只)?支持(?:输出)?(?:数据类型)?\s*(?P<d>{_DTLIST})(?:数据类型|类型)?", n, flags=re.I)
    if m:
        c: dict = {"kind": "dtype", "allowed": _dtypes(m.group("d"))}
        if m.group("p"):
            c["param"] = re.split(r"\s*(?:[，,、]|和)\s*", m.group("p"))[0]
        return c
    m = re.fullmatch(rf"(?:(?:入参)?(?P<p>{_PARAM})\s*)?不支持\s*(?P<d>{_DTLIST})\s*(?:数据类型|类型)?(?:的?输入)?", n, flags=re.I)
    if m:
        c = {"kind": "dtype", "forbidden": _dtypes(m.group("d"))}
        if m.group("p"):
            c["param"] = m.group("p")
        return c
    m = re.fullmatch(rf"(?:当前)?不支持(?:入参|参数)?\s*(?P<p>{_PARAM})\s*(?:参数|入参)?", n)
    if m and m.group("p").lower() not in DTYPES and m.group("p") not in ("nan", "NaN", "inf"):
        return {"kind": "arg", "param": m.group("p")}
    m = re.fullmatch(rf"(?:当前)?不支持\s*(?P<p>{_PARAM})\s*=\s*(?P<v>[A-Za-z0-9_.()'\"]+)\s*(?:的)?场景", n)
    if m:
        vals = _values(m.group("v"))
        if vals is not None:
            return {"kind": "value", "param": m.group("p"), "forbidden": vals}
    m = re.fullmatch(rf"(?:当前)?(?:属性)?(?P<p>{_PARAM})\s*(?:参数|属性)?(?:的值)?(?:目前)?(?:在NPU上)?\s*(?:仅|只)支持(?:设置为|传入|取值为)?\s*(?P<v>.+)", n)
    if m and not re.search(r"[维度]", m.group("v")):
        vals = _values(m.group("v"))
        if vals is not None and not (m.group("p") in ("input", "self", "x", "other") and all(isinstance(v, str) for v in vals)):
            return {"kind": "value", "param": m.group("p"), "allowed": vals}
    m = re.fullmatch(rf"(?:入参)?(?P<p>{_PARAM})?\s*不支持\s*(?P<n>\d)\s*维(?:度)?(?:的?输入)?", n)
    if m:
        c = {"kind": "ndim", "forbidden": [int(m.group("n"))]}
        if m.group("p"):
            c["param"] = m.group("p")
        return c
    m = re.fullmatch(r"(?:输入|输入tensor的维度)?最大支持\s*(?P<n>\d)\s*维|不支持\s*(?P<m>\d)\s*维度?及以上(?:的)?输入|输入tensor的维度不大于\s*(?P<k>\d)\s*维", n)
    if m:
        if m.group("m"):
            return {"kind": "ndim", "max": int(m.group("m")) - 1}
        return {"kind": "ndim", "max": int(m.group("n") or m.group("k"))}
    m = re.fullmatch(rf"(?P<p>{_PARAM})?\s*(?:仅)?支持\s*(?P<a>\d)\s*[-~]\s*(?P<b>\d)\s*维", n)
    if m:
        c = {"kind": "ndim", "min": int(m.group("a")), "max": int(m.group("b"))}
        if m.group("p"):
            c["param"] = m.group("p")
        return c
    return None


def _fmt_value(v) -> str:
    if isinstance(v, dict):
        return v["name"]
    if isinstance(v, list):
        return "(" + ", ".join(map(str, v)) + ")"
    return repr(v) if isinstance(v, str) else str(v)


def render_check(c: dict) -> str:
    """English sentence for a check (used where the docs have no official English line)."""
    who = f"{c['param']}: " if c.get("param") else ""
    k = c["kind"]
    if k == "dtype":
        if c.get("when"):
            w = c["when"]
            who = f"when {w['param']} is {'not ' if 'not_equals' in w else ''}{w.get('equals', w.get('not_equals'))}, " + who
        if "allowed" in c:
            return f"{who}supports {', '.join(c['allowed'])} only"
        return f"{who}does not support {', '.join(c['forbidden'])}"
    if k == "arg":
        return f"Does not support the {c['param']} parameter"
    if k == "value":
        if "allowed" in c and c["param"] == "mode" and all(isinstance(v, str) for v in c["allowed"]):
            return f"mode: supports {', '.join(c['allowed'])} only"
        if "allowed" in c:
            return f"{c['param']}: supports only {' or '.join(_fmt_value(v) for v in c['allowed'])}"
        return f"{c['param']}: does not support {' or '.join(_fmt_value(v) for v in c['forbidden'])}"
    if k == "attribute":
        return (f"Only the {', '.join(c['allowed'][:-1])} and {c['allowed'][-1]} attributes are filled; the other CUDA "
                "attributes are empty") if len(c["allowed"]) > 1 else \
            f"Only the {c['allowed'][0]} attribute is filled; the other CUDA attributes are empty"
    if k == "result":
        return "Only creating the result is supported; no other operation on it"
    if k == "ndim":
        who = c.get("param", "input")
        if "forbidden" in c:
            return f"{who} does not support {', '.join(map(str, c['forbidden']))}-D input"
        if "min" in c:
            return f"{who} supports {c['min']}-D to {c['max']}-D input"
        return f"{who} supports at most {c['max']} dimensions"
    raise ValueError(k)


def process(text: str, translator: Translator) -> dict:
    """English text, checks and remainder of one Chinese (or English) limitations text.

    Returns {"text": English-or-mixed markdown, "how": official|line|partial|none|original,
             "checks": [...], "remainder": [lines]}.
    """
    items = text_lines(text)
    text_items = [norm(x) for k, x in items if k == "text"]
    out_lines: list[str] = []
    checks: list[dict] = []
    remainder: list[str] = []
    hows: set[str] = set()
    whole = translator.full.get("\n".join(text_items)) if CJK.search(text) else None
    whole_lines = whole.split("\n") if whole is not None and len(whole.split("\n")) == len(text_items) else None
    ti = 0
    for kind, x in items:
        if kind == "code":
            out_lines.append(_code_english(x))
            continue
        check = parse_line(x)
        if whole_lines is not None:
            en, how = whole_lines[ti], "official"
        else:
            en, how = translator.line(x, check)
        ti += 1
        hows.add(how)
        line = ascii_punctuation(en) if en is not None else norm(x)
        out_lines.append(line)
        if check is not None:
            c = dict(check)
            c["text"] = line
            checks.append(c)
        else:
            remainder.append(line)
    if whole is not None and whole_lines is None:
        # the official text splits differently: use it whole, parse checks from the Chinese lines
        out_lines = [whole] + [_code_english(x) for k, x in items if k == "code"]
        remainder = [whole] if not checks else [ln for ln in remainder]
        hows = {"official"}
    if not CJK.search(text):
        how = "original"
    elif "none" in hows:
        how = "partial" if hows - {"none"} else "none"
    elif hows <= {"official", "original"}:
        how = "official"
    else:
        how = "derived"
    return {"text": "\n".join(out_lines), "how": how, "checks": checks, "remainder": remainder}
