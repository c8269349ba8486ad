"""report.schema.json as a Python value, for checking whole reports read back from the cache without
opening a file of the tool on a warm run (a test keeps it equal to the JSON file)."""

# generated from report.schema.json: python -c "import json, pprint; from analyse.schemas import schema_text; pprint.pp(json.loads(schema_text('report.schema.json')), width=118, sort_dicts=False)"
SCHEMA = {'$schema': 'https://json-schema.org/draft/2020-12/schema',
 '$id': 'npu-analyse/report.schema.json',
 'title': 'npu-analyse analysis report (script and thirdparty modes)',
 'description': 'The JSON report that `npu-analyse script` and `npu-analyse thirdparty` write. Other formats (HTML, '
                'SARIF, CSV, terminal) are renderings of this same data. Fields may be added; the ones below may not '
                'be renamed or dropped. The project ships a copy of this file inside its package, and its tests '
                'validate against that copy.',
 'type': 'object',
 'required': ['schema_version', 'tool', 'mode', 'target', 'inputs', 'summary', 'findings', 'errors'],
 'properties': {'schema_version': {'const': '1'},
                'tool': {'type': 'object',
                         'required': ['name', 'version'],
                         'properties': {'name': {'const': 'npu-analyse'}, 'version': {'type': 'string'}}},
                'mode': {'enum': ['script', 'thirdparty']},
                'target': {'type': 'object',
                           'description': 'What the knowledge base was selected for.',
                           'required': ['torch_version', 'knowledge_base'],
                           'properties': {'torch_version': {'type': 'string',
                                                            'description': 'PyTorch version the analysed code '
                                                                           'targets, e.g. 2.8.0'},
                                          'torch_npu_version': {'type': ['string', 'null']},
                                          'knowledge_base': {'type': 'string',
                                                             'description': 'Identifier of the knowledge data used '
                                                                            '(version and provenance).'},
                                          'torch_version_choice': {'type': 'string',
                                                                   'description': 'How torch_version was chosen, in '
                                                                                  'words: given with '
                                                                                  '--torch-version, pinned by the '
                                                                                  'project (file:line), or the '
                                                                                  'newest when nothing is pinned.'},
                                          'torch_version_source': {'type': 'string',
                                                                   'enum': ['given', 'pin', 'default'],
                                                                   'description': 'Where torch_version came from: '
                                                                                  '--torch-version/configuration '
                                                                                  '(given), a torch pin in the '
                                                                                  'project (pin), or the knowledge '
                                                                                  "base's newest because nothing is "
                                                                                  'pinned (default).'}}},
                'inputs': {'type': 'array',
                           'items': {'type': 'string'},
                           'description': 'Paths as given on the command line.'},
                'summary': {'type': 'object',
                            'required': ['files_analysed',
                                         'files_failed',
                                         'lines_analysed',
                                         'duration_s',
                                         'by_category',
                                         'by_severity',
                                         'verdict'],
                            'properties': {'files_analysed': {'type': 'integer', 'minimum': 0},
                                           'files_failed': {'type': 'integer', 'minimum': 0},
                                           'lines_analysed': {'type': 'integer', 'minimum': 0},
                                           'duration_s': {'type': 'number', 'minimum': 0},
                                           'by_category': {'type': 'object',
                                                           'additionalProperties': {'type': 'integer'}},
                                           'by_severity': {'type': 'object',
                                                           'additionalProperties': {'type': 'integer'}},
                                           'verdict': {'type': 'object',
                                                       'required': ['effort',
                                                                    'blockers',
                                                                    'manual_changes',
                                                                    'auto_migratable'],
                                                       'properties': {'effort': {'enum': ['none',
                                                                                          'low',
                                                                                          'medium',
                                                                                          'high',
                                                                                          'blocked',
                                                                                          'unknown'],
                                                                                 'description': 'Effort for the code '
                                                                                                'that runs: the '
                                                                                                'findings reached '
                                                                                                'from the entry '
                                                                                                'points (see '
                                                                                                "`scope`). 'unknown' "
                                                                                                'when too little '
                                                                                                'could be analysed '
                                                                                                'to judge (see '
                                                                                                '`summary.complete`).'},
                                                                      'blockers': {'type': 'integer', 'minimum': 0},
                                                                      'manual_changes': {'type': 'integer',
                                                                                         'minimum': 0},
                                                                      'auto_migratable': {'type': 'integer',
                                                                                          'minimum': 0,
                                                                                          'description': 'Findings '
                                                                                                         'that `from '
                                                                                                         'torch_npu.contrib '
                                                                                                         'import '
                                                                                                         'transfer_to_npu` '
                                                                                                         'handles '
                                                                                                         'with no '
                                                                                                         'code '
                                                                                                         'change.'},
                                                                      'explanation': {'type': 'string'},
                                                                      'scope': {'enum': ['entry-points',
                                                                                         'whole-tree'],
                                                                                'description': 'entry-points: the '
                                                                                               'verdict counts only '
                                                                                               'findings reached '
                                                                                               'from '
                                                                                               '`summary.entry_points`; '
                                                                                               'whole-tree: no entry '
                                                                                               'point was found or '
                                                                                               'given, so every '
                                                                                               'finding counts.'},
                                                                      'drivers': {'type': 'array',
                                                                                  'description': 'The few distinct '
                                                                                                 'problems that set '
                                                                                                 'the effort, most '
                                                                                                 'important first '
                                                                                                 '(one per API or '
                                                                                                 'library, not one '
                                                                                                 'per line).',
                                                                                  'items': {'type': 'object',
                                                                                            'required': ['api',
                                                                                                         'severity',
                                                                                                         'count'],
                                                                                            'properties': {'api': {'type': 'string'},
                                                                                                           'severity': {'type': 'string'},
                                                                                                           'count': {'type': 'integer',
                                                                                                                     'minimum': 1},
                                                                                                           'paths': {'type': 'array',
                                                                                                                     'items': {'type': 'string'}}}}}}},
                                           'complete': {'type': 'boolean',
                                                        'description': 'false when files could not be analysed (see '
                                                                       '`errors`) or a pass failed: then the verdict '
                                                                       'may miss problems, and says so.'},
                                           'entry_points': {'type': 'array',
                                                            'description': 'Programs the project runs: scripts with '
                                                                           'a `__main__` guard or top-level code, '
                                                                           'console scripts and entry points '
                                                                           'declared in packaging files, and paths '
                                                                           'given with --entry. Each has the verdict '
                                                                           'of what it reaches.',
                                                            'items': {'type': 'object',
                                                                      'required': ['path', 'reason', 'verdict'],
                                                                      'properties': {'path': {'type': 'string'},
                                                                                     'function': {'type': ['string',
                                                                                                           'null'],
                                                                                                  'description': 'qualified '
                                                                                                                 'name '
                                                                                                                 'when '
                                                                                                                 'the '
                                                                                                                 'entry '
                                                                                                                 'point '
                                                                                                                 'is '
                                                                                                                 'a '
                                                                                                                 'function '
                                                                                                                 '(console '
                                                                                                                 'script), '
                                                                                                                 'else '
                                                                                                                 'null'},
                                                                                     'reason': {'enum': ['main-guard',
                                                                                                         'top-level-code',
                                                                                                         'console-script',
                                                                                                         'given']},
                                                                                     'role': {'$ref': '#/$defs/role'},
                                                                                     'verdict': {'type': 'object',
                                                                                                 'required': ['effort',
                                                                                                              'blockers',
                                                                                                              'manual_changes',
                                                                                                              'auto_migratable'],
                                                                                                 'properties': {'effort': {'enum': ['none',
                                                                                                                                    'low',
                                                                                                                                    'medium',
                                                                                                                                    'high',
                                                                                                                                    'blocked',
                                                                                                                                    'unknown']},
                                                                                                                'blockers': {'type': 'integer',
                                                                                                                             'minimum': 0},
                                                                                                                'manual_changes': {'type': 'integer',
                                                                                                                                   'minimum': 0},
                                                                                                                'auto_migratable': {'type': 'integer',
                                                                                                                                    'minimum': 0},
                                                                                                                'explanation': {'type': 'string',
                                                                                                                                'description': 'This '
                                                                                                                                               "program's "
                                                                                                                                               'verdict '
                                                                                                                                               'in '
                                                                                                                                               'words: '
                                                                                                                                               'the '
                                                                                                                                               'APIs '
                                                                                                                                               'it '
                                                                                                                                               'counts '
                                                                                                                                               'by '
                                                                                                                                               'severity, '
                                                                                                                                               'the '
                                                                                                                                               'advice '
                                                                                                                                               'it '
                                                                                                                                               'reaches '
                                                                                                                                               'that '
                                                                                                                                               'needs '
                                                                                                                                               'no '
                                                                                                                                               'change, '
                                                                                                                                               'and '
                                                                                                                                               'the '
                                                                                                                                               'blocker/manual/automatic '
                                                                                                                                               'uses '
                                                                                                                                               'it '
                                                                                                                                               'may '
                                                                                                                                               'reach '
                                                                                                                                               'that '
                                                                                                                                               'do '
                                                                                                                                               'not '
                                                                                                                                               'count, '
                                                                                                                                               'with '
                                                                                                                                               'the '
                                                                                                                                               'reason '
                                                                                                                                               '(off '
                                                                                                                                               'with '
                                                                                                                                               'the '
                                                                                                                                               'defaults, '
                                                                                                                                               'guarded '
                                                                                                                                               'with '
                                                                                                                                               'a '
                                                                                                                                               'fallback, '
                                                                                                                                               'reached '
                                                                                                                                               'only '
                                                                                                                                               'through '
                                                                                                                                               'calls '
                                                                                                                                               'not '
                                                                                                                                               'followed).'}}},
                                                                                     'library': {'type': 'boolean',
                                                                                                 'description': 'True '
                                                                                                                'when '
                                                                                                                'the '
                                                                                                                'file '
                                                                                                                'is '
                                                                                                                'also '
                                                                                                                'a '
                                                                                                                'library '
                                                                                                                'module '
                                                                                                                '(a '
                                                                                                                'module '
                                                                                                                'of '
                                                                                                                'an '
                                                                                                                'analysed '
                                                                                                                'package, '
                                                                                                                'or '
                                                                                                                'a '
                                                                                                                'torch.hub '
                                                                                                                'hubconf.py): '
                                                                                                                'migrate '
                                                                                                                'adds '
                                                                                                                'the '
                                                                                                                'transfer_to_npu '
                                                                                                                'shim '
                                                                                                                'only '
                                                                                                                'to '
                                                                                                                'programs, '
                                                                                                                'never '
                                                                                                                'here.'}}}},
                                           'off_path': {'type': 'object',
                                                        'description': 'Findings in code that no entry point '
                                                                       'reaches, or in tests, docs, examples and '
                                                                       'tools: listed, but not counted in the '
                                                                       'verdict.',
                                                        'properties': {'by_severity': {'type': 'object',
                                                                                       'additionalProperties': {'type': 'integer'}},
                                                                       'by_role': {'type': 'object',
                                                                                   'additionalProperties': {'type': 'integer'}},
                                                                       'count': {'type': 'integer',
                                                                                 'minimum': 0,
                                                                                 'description': 'Listed findings the '
                                                                                                'verdict does not '
                                                                                                'count (baselined '
                                                                                                'findings are not '
                                                                                                'listed and not in '
                                                                                                'it).'},
                                                                       'by_reason': {'type': 'object',
                                                                                     'description': 'The same '
                                                                                                    'findings by the '
                                                                                                    'reason they are '
                                                                                                    'not counted '
                                                                                                    '(findings[].off_path.reason); '
                                                                                                    'the values add '
                                                                                                    'up to count.',
                                                                                     'additionalProperties': {'type': 'integer'}}}},
                                           'analysis_s': {'type': 'number',
                                                          'minimum': 0,
                                                          'description': 'How long the analysis took, in seconds; '
                                                                         'with from_cache the time of the run that '
                                                                         'made the cached report (duration_s is then '
                                                                         "this run's time)."},
                                           'from_cache': {'type': 'boolean',
                                                          'description': 'True when the whole report was reused from '
                                                                         'the results cache (absent when '
                                                                         'analysed).'}}},
                'findings': {'type': 'array', 'items': {'$ref': '#/$defs/finding'}},
                'errors': {'type': 'array',
                           'description': 'Inputs that could not be analysed (fully or partly). A bad input is '
                                          'reported here; it never aborts the run.',
                           'items': {'type': 'object',
                                     'required': ['path', 'kind', 'message'],
                                     'properties': {'path': {'type': 'string'},
                                                    'kind': {'enum': ['syntax',
                                                                      'encoding',
                                                                      'io',
                                                                      'too-large',
                                                                      'timeout',
                                                                      'internal']},
                                                    'message': {'type': 'string'},
                                                    'line': {'type': ['integer', 'null']}}}},
                'thirdparty': {'type': 'object',
                               'description': 'thirdparty mode only: every library function whose NPU status is not '
                                              "plain 'supported'.",
                               'properties': {'functions': {'type': 'array',
                                                            'items': {'type': 'object',
                                                                      'required': ['qualname',
                                                                                   'path',
                                                                                   'line',
                                                                                   'status',
                                                                                   'reasons'],
                                                                      'properties': {'qualname': {'type': 'string',
                                                                                                  'description': 'Importable '
                                                                                                                 'dotted '
                                                                                                                 'name, '
                                                                                                                 'e.g. '
                                                                                                                 'mmcv.ops.roi_align.RoIAlign.forward'},
                                                                                     'path': {'type': 'string'},
                                                                                     'line': {'type': 'integer'},
                                                                                     'status': {'enum': ['unsupported',
                                                                                                         'unknown',
                                                                                                         'needs-migration',
                                                                                                         'conditional'],
                                                                                                'description': 'unsupported: '
                                                                                                               'runs '
                                                                                                               'into '
                                                                                                               'something '
                                                                                                               'with '
                                                                                                               'no '
                                                                                                               'NPU '
                                                                                                               'path; '
                                                                                                               'needs-migration: '
                                                                                                               'runs '
                                                                                                               'once '
                                                                                                               'the '
                                                                                                               'CUDA '
                                                                                                               'uses '
                                                                                                               'are '
                                                                                                               'migrated '
                                                                                                               '(transfer_to_npu '
                                                                                                               'or '
                                                                                                               'the '
                                                                                                               "library's "
                                                                                                               'own '
                                                                                                               'NPU '
                                                                                                               'path); '
                                                                                                               'conditional: '
                                                                                                               'unsupported '
                                                                                                               'only '
                                                                                                               'under '
                                                                                                               'a '
                                                                                                               'guard '
                                                                                                               'or '
                                                                                                               'an '
                                                                                                               'option '
                                                                                                               '(see '
                                                                                                               '`conditions`); '
                                                                                                               'unknown: '
                                                                                                               'depends '
                                                                                                               'on '
                                                                                                               'undocumented '
                                                                                                               'device '
                                                                                                               'APIs '
                                                                                                               '(see '
                                                                                                               '`reasons`).'},
                                                                                     'reasons': {'type': 'array',
                                                                                                 'items': {'type': 'string'},
                                                                                                 'description': 'The '
                                                                                                                'APIs '
                                                                                                                'or '
                                                                                                                'extension '
                                                                                                                'ops '
                                                                                                                'at '
                                                                                                                'the '
                                                                                                                'root '
                                                                                                                'of '
                                                                                                                'the '
                                                                                                                'status.'},
                                                                                     'via': {'type': 'array',
                                                                                             'items': {'type': 'string'},
                                                                                             'description': 'Shortest '
                                                                                                            'call '
                                                                                                            'chain '
                                                                                                            'from '
                                                                                                            'this '
                                                                                                            'function '
                                                                                                            'to a '
                                                                                                            'root '
                                                                                                            'reason, '
                                                                                                            'callee '
                                                                                                            'last.'},
                                                                                     'conditions': {'type': 'array',
                                                                                                    'items': {'type': 'string'},
                                                                                                    'description': 'For '
                                                                                                                   'conditional: '
                                                                                                                   'the '
                                                                                                                   'guards '
                                                                                                                   'or '
                                                                                                                   'options '
                                                                                                                   'under '
                                                                                                                   'which '
                                                                                                                   'the '
                                                                                                                   'root '
                                                                                                                   'is '
                                                                                                                   'reached, '
                                                                                                                   'e.g. '
                                                                                                                   '"pool_type=\'max\'".'}}}},
                                              'library': {'type': 'object',
                                                          'description': 'The library as a whole.',
                                                          'properties': {'name': {'type': 'string'},
                                                                         'npu_support': {'type': 'object',
                                                                                         'description': 'Whether the '
                                                                                                        'library '
                                                                                                        'itself '
                                                                                                        'already '
                                                                                                        'runs on '
                                                                                                        'Ascend '
                                                                                                        'NPUs, and '
                                                                                                        'the '
                                                                                                        'evidence '
                                                                                                        'found in '
                                                                                                        'its source '
                                                                                                        '(an NPU '
                                                                                                        'accelerator '
                                                                                                        'or backend, '
                                                                                                        'NPU kernels '
                                                                                                        'registered '
                                                                                                        'for its '
                                                                                                        'ops, '
                                                                                                        'is_npu_available '
                                                                                                        'branches).',
                                                                                         'required': ['level',
                                                                                                      'evidence'],
                                                                                         'properties': {'level': {'enum': ['native',
                                                                                                                           'partial',
                                                                                                                           'none']},
                                                                                                        'evidence': {'type': 'array',
                                                                                                                     'items': {'type': 'string'}}}},
                                                                         'verdict': {'type': 'string',
                                                                                     'description': 'one sentence a '
                                                                                                    'user can act '
                                                                                                    'on'},
                                                                         'import_failures': {'type': 'array',
                                                                                             'description': 'Modules '
                                                                                                            'whose '
                                                                                                            'top-level '
                                                                                                            'code '
                                                                                                            'calls a '
                                                                                                            'CUDA-only '
                                                                                                            'API at '
                                                                                                            'import '
                                                                                                            'time, '
                                                                                                            'unguarded '
                                                                                                            '(a '
                                                                                                            '`torch.cuda.get_device_capability() '
                                                                                                            '>= (8, '
                                                                                                            '0)` '
                                                                                                            'test): '
                                                                                                            'importing '
                                                                                                            'them '
                                                                                                            'fails '
                                                                                                            'on an '
                                                                                                            'NPU '
                                                                                                            'host as '
                                                                                                            'written. '
                                                                                                            'Absent '
                                                                                                            'when '
                                                                                                            'there '
                                                                                                            'are '
                                                                                                            'none.',
                                                                                             'items': {'type': 'object',
                                                                                                       'required': ['module',
                                                                                                                    'path',
                                                                                                                    'line',
                                                                                                                    'api'],
                                                                                                       'properties': {'module': {'type': 'string'},
                                                                                                                      'path': {'type': 'string'},
                                                                                                                      'line': {'type': 'integer'},
                                                                                                                      'api': {'type': 'string'}}}}}},
                                              'coverage': {'type': 'object',
                                                           'description': 'What the call graph could not follow: '
                                                                          'calls whose callee could not be resolved '
                                                                          'and dynamic dispatch (getattr, eval, '
                                                                          'registries), so a reader knows where the '
                                                                          'analysis is blind.',
                                                           'properties': {'resolved_calls': {'type': 'integer'},
                                                                          'unresolved_calls': {'type': 'integer'},
                                                                          'dynamic_dispatch': {'type': 'array',
                                                                                               'items': {'type': 'object',
                                                                                                         'properties': {'path': {'type': 'string'},
                                                                                                                        'line': {'type': 'integer'},
                                                                                                                        'expression': {'type': 'string'}}}}}}}}},
 '$defs': {'finding': {'type': 'object',
                       'required': ['id', 'code', 'category', 'severity', 'path', 'line', 'api', 'message'],
                       'properties': {'id': {'type': 'string',
                                             'description': 'Stable fingerprint: unchanged when unrelated lines are '
                                                            'added above it (used for baselines).'},
                                      'code': {'type': 'string',
                                               'pattern': '^NPU[0-9]{3}$',
                                               'description': 'Rule code, documented in the README/rule docs.'},
                                      'category': {'enum': ['cuda-api',
                                                            'distributed',
                                                            'unsupported-api',
                                                            'unknown-api',
                                                            'third-party',
                                                            'cuda-extension',
                                                            'dynamic-shape',
                                                            'affinity',
                                                            'precision-advice',
                                                            'performance-advice']},
                                      'severity': {'enum': ['blocker', 'manual', 'auto', 'advice', 'info'],
                                                   'description': 'blocker: will not run on NPU without new work '
                                                                  '(e.g. a CUDA kernel); manual: needs a code '
                                                                  'change; auto: transfer_to_npu handles it; advice: '
                                                                  'runs, but precision/performance can improve; '
                                                                  'info: worth knowing.'},
                                      'path': {'type': 'string',
                                               'description': "Path relative to the analysed root, '/'-separated."},
                                      'line': {'type': 'integer', 'minimum': 1},
                                      'end_line': {'type': 'integer', 'minimum': 1},
                                      'column': {'type': 'integer', 'minimum': 0},
                                      'api': {'type': 'string',
                                              'description': 'Fully qualified API (e.g. torch.cuda.set_device, '
                                                             'torch.Tensor.nonzero, apex.amp.initialize) or a short '
                                                             "pattern name (e.g. 'bool-mask-index')."},
                                      'message': {'type': 'string'},
                                      'replacement': {'type': ['string', 'null'],
                                                      'description': 'What to write instead, when one is known.'},
                                      'confidence': {'enum': ['high', 'medium', 'low']},
                                      'evidence': {'enum': ['syntax',
                                                            'inferred',
                                                            'knowledge',
                                                            'probed',
                                                            'propagated']},
                                      'snippet': {'type': 'string'},
                                      'chain': {'type': 'array',
                                                'items': {'type': 'string'},
                                                'description': 'For findings that come from a called function (in '
                                                               'the project or an analysed library): the call chain '
                                                               'that leads to the root cause.'},
                                      'reach': {'type': 'object',
                                                'description': 'Whether the code of this finding runs when an entry '
                                                               'point runs.',
                                                'required': ['status'],
                                                'properties': {'status': {'enum': ['entry-point',
                                                                                   'reachable',
                                                                                   'unreached',
                                                                                   'unknown'],
                                                                          'description': 'entry-point: in an entry '
                                                                                         "point's own top-level code "
                                                                                         'or main function; '
                                                                                         'reachable: a call path '
                                                                                         'from an entry point leads '
                                                                                         'here; unreached: no entry '
                                                                                         'point reaches it; unknown: '
                                                                                         'could not be decided '
                                                                                         '(dynamic dispatch, no '
                                                                                         'entry point).'},
                                                               'entry_points': {'type': 'array',
                                                                                'items': {'type': 'string'},
                                                                                'description': 'entry points that '
                                                                                               'reach it'},
                                                               'path': {'type': 'array',
                                                                        'items': {'type': 'string'},
                                                                        'description': 'one shortest call path from '
                                                                                       'an entry point, caller '
                                                                                       'first'},
                                                               'reason': {'type': 'string',
                                                                          'description': 'unknown: why it cannot be '
                                                                                         'decided; reachable: how '
                                                                                         'the path was found when a '
                                                                                         'step of it is a guess of a '
                                                                                         'kind the words name (a '
                                                                                         'class built from the '
                                                                                         'configs the project ships, '
                                                                                         "the program's config being "
                                                                                         'named on its command '
                                                                                         'line)'}}},
                                      'role': {'$ref': '#/$defs/role'},
                                      'guard': {'type': ['object', 'null'],
                                                'description': 'The condition under which this code runs, when it is '
                                                               'guarded; null when it runs unconditionally.',
                                                'required': ['kind', 'line'],
                                                'properties': {'kind': {'enum': ['import-fallback',
                                                                                 'availability-check',
                                                                                 'device-branch',
                                                                                 'option',
                                                                                 'version-check',
                                                                                 'platform-check'],
                                                                        'description': 'import-fallback: try/except '
                                                                                       'ImportError (or a None '
                                                                                       'fallback); '
                                                                                       'availability-check: if X is '
                                                                                       'available / HAVE_X / X is '
                                                                                       'not None; device-branch: if '
                                                                                       "device.type == 'cuda' (and "
                                                                                       'the like); option: a user '
                                                                                       'flag or argument that is off '
                                                                                       'by default; version-check: a '
                                                                                       'torch/CUDA version test; '
                                                                                       'platform-check: OS or vendor '
                                                                                       'test.'},
                                                               'line': {'type': 'integer'},
                                                               'fallback': {'type': 'boolean',
                                                                            'description': 'true when the guarded '
                                                                                           'code has an alternative '
                                                                                           'path that runs on an NPU '
                                                                                           '(an else branch, an '
                                                                                           'except body, a '
                                                                                           'default)'}}},
                                      'context': {'type': 'object',
                                                  'description': 'The source about the finding: up to three lines '
                                                                 'before and after its own lines, from line start.',
                                                  'properties': {'start': {'type': 'integer', 'minimum': 1},
                                                                 'lines': {'type': 'array',
                                                                           'items': {'type': 'string'}}}},
                                      'rework': {'enum': ['high'],
                                                 'description': "A GPU-only library's use with no drop-in NPU "
                                                                "replacement (the knowledge entry's rework): the "
                                                                'code around it has to be restructured, so a counted '
                                                                'one grades the program at least high.'},
                                      'npu_support': {'enum': ['native'],
                                                      'description': 'The library runs on Ascend through its own NPU '
                                                                     'support with the code unchanged (the knowledge '
                                                                     "entry's npu_support, e.g. DeepSpeed's NPU "
                                                                     'accelerator); the replacement is the install '
                                                                     'or accelerator step.'},
                                      'cell': {'type': 'object',
                                               'description': 'A finding in a Jupyter notebook (.ipynb): its code '
                                                              'cell and the line in that cell (both 1-based); line '
                                                              "is the line of the notebook's code cells taken "
                                                              'together.',
                                               'properties': {'cell': {'type': 'integer', 'minimum': 1},
                                                              'line': {'type': 'integer', 'minimum': 1}}}}},
           'role': {'enum': ['product', 'test', 'example', 'tool', 'build', 'docs'],
                    'description': 'What the file is in its project: product (the code users run or import), test, '
                                   'example, tool (scripts around the product: benchmarks, exporters, environment '
                                   'printers), build (setup.py and build scripts), docs.'}}}
