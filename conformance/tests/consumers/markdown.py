"""Renders Markdown on stdin as GitHub does (cmark-gfm with its table, strikethrough,
autolink and tagfilter extensions) and prints, as JSON, the text a reader sees in every
table cell, list item and <summary>, and the inline markup elements the page holds.
Usage: python markdown.py < summary.md
"""
import json
import sys
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

TEXT_OF = ("td", "li", "summary")
MARKUP = ("em", "strong", "del", "code", "a", "img")


class Texts(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open = []
        self.texts = {tag: [] for tag in TEXT_OF}
        self.markup = []

    def handle_starttag(self, tag, attrs):
        if tag in TEXT_OF:
            self.open.append([tag, ""])
        if tag in MARKUP:
            self.markup.append(tag)

    def handle_endtag(self, tag):
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][0] == tag:
                name, text = self.open.pop(i)
                self.texts[name].append(text.strip())
                break

    def handle_data(self, data):
        for entry in self.open:
            entry[1] += data


html = cmarkgfm.github_flavored_markdown_to_html(sys.stdin.read(), options=Options.CMARK_OPT_UNSAFE)
parser = Texts()
parser.feed(html)
print(json.dumps({"texts": parser.texts, "markup": parser.markup, "html": html}))
