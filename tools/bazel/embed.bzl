"""Embeds a text file in C++ as a raw string literal."""

def tir_embed_text(name, src, delimiter):
    """Writes `name` (an .inc file) holding R"delimiter(<src>)delimiter".

    Args:
      name: the output file, e.g. "page.inc"; `#include` it as an expression.
      src: the text file.
      delimiter: raw-string delimiter that never occurs in `src`.
    """
    native.genrule(
        name = name.replace(".", "_"),
        srcs = [src],
        outs = [name],
        cmd = "(echo 'R\"%s('; cat $<; echo ')%s\"') > $@" % (delimiter, delimiter),
    )
