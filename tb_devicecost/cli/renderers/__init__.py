"""Renderers: a report (`tb_devicecost.words.build_report`) as text.

One module per output form, each with a `render(report, ...)` function
returning a string:

- `console`: the default, for an 80-column terminal;
- `markdown`: GitHub-flavoured Markdown, for pull requests and CI;
- `jsonrenderer`: the JSON of `docs/CLI.md`, the stable machine interface.

Every figure is written by `tb_devicecost.analysis.formatting`, the rule the
findings and the tab use too; `common` holds what the text forms share.
"""
