"""Small helpers for the static HTML pages (no JavaScript, no CDN)."""

import html

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5em auto;
       max-width: 1400px; padding: 0 1em; color: #1b1b1b; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
th, td { border: 1px solid #d0d0d0; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0 2em 0; } figure img { max-width: 100%; border: 1px solid #e4e4e4; }
figcaption { font-size: .9em; color: #444; }
.note { background: #fff8e1; border-left: 4px solid #f0b400; padding: .4em .8em; margin: .5em 0; }
.bad { color: #b00020; font-weight: 600; } .good { color: #1b7f2a; font-weight: 600; }
.noise { color: #7b1fa2; }
nav a { margin-right: 1em; } code { background: #f4f4f4; padding: 0 .2em; }
.muted { color: #666; font-size: .9em; }
"""


def esc(s):
    return html.escape(str(s), quote=True)


def page(title, body, css_href=None):
    style = f'<link rel="stylesheet" href="{esc(css_href)}">' if css_href else f"<style>{CSS}</style>"
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n{style}\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def table(headers, rows, num_cols=(), cls=None, raw=False):
    """rows: lists of cells; raw=True means the cells are already HTML."""
    c = f' class="{esc(cls)}"' if cls else ""
    out = [f"<table{c}>", "<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr></thead>",
           "<tbody>"]
    for r in rows:
        cells = []
        for i, v in enumerate(r):
            td = '<td class="num">' if i in num_cols else "<td>"
            cells.append(td + (str(v) if raw else esc(v)) + "</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)
