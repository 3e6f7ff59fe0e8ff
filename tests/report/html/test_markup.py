"""The page's escaping choke point (``_markup``) and the script's one way into the DOM."""

from __future__ import annotations

import re
from enum import StrEnum
from importlib import resources
from pathlib import Path

import pytest

from axis_eval.report.html import _markup
from axis_eval.report.html._markup import Markup, Template, escape, fragments, script_escape

HTML_PACKAGE = Path(_markup.__file__).parent
EVIL = "</script><img src=x onerror=alert(1)><!-- \"' {{x}} &"


def test_a_text_slot_escapes_and_takes_fragments_as_they_are() -> None:
    inner = Template("inner", "<b>{{x}}</b>").render(x=EVIL)
    outer = Template("outer", "<p>{{a}} {{b}} {{n}}</p>").render(a=inner, b=EVIL, n=3)
    escaped = "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&lt;!-- &quot;&#x27; {{x}} &amp;"
    assert outer == f"<p><b>{escaped}</b> {escaped} 3</p>"
    assert isinstance(outer, Markup)


def test_a_slot_value_is_never_read_as_a_template() -> None:
    assert Template("t", "<p>{{a}}</p>").render(a="{{a}}") == "<p>{{a}}</p>"


def test_an_attribute_slot_escapes_even_a_fragment() -> None:
    fragment = Template("f", "<i>x</i>").render()
    out = Template("t", '<a title="{{t}}" href="#pair-{{n}}">x</a>').render(t=fragment, n=1)
    assert out == '<a title="&lt;i&gt;x&lt;/i&gt;" href="#pair-1">x</a>'


def test_a_script_slot_cannot_close_its_element() -> None:
    out = Template("t", '<script type="x">{{data}}</script>').render(data=EVIL)
    assert out.count("</script") == 1 and "<!--" not in out
    assert script_escape("a\u2028b\u2029<>&") == "a\\u2028b\\u2029\\u003c\\u003e\\u0026"
    assert script_escape("QUJD+/==") == "QUJD+/=="  # base64 passes untouched


@pytest.mark.parametrize(
    "template",
    [
        "<td title={{x}}>",  # unquoted
        '<img onerror="{{x}}">',
        '<p style="{{x}}">',
        '<a href="{{x}}">',  # a URL: only fragment links ("#…") take a slot
        '<a href="javascript:{{x}}">',
        "<!-- {{x}} -->",
    ],
)
def test_templates_with_a_slot_in_a_dangerous_place_do_not_load(template: str) -> None:
    with pytest.raises(ValueError):
        Template("t", template)


def test_a_missing_or_unknown_or_none_value_is_an_error() -> None:
    template = Template("t", "<p>{{a}}</p>")
    with pytest.raises(KeyError):
        template.render()
    with pytest.raises(KeyError):
        template.render(a="x", b="y")
    with pytest.raises(TypeError):
        template.render(a=None)
    with pytest.raises(TypeError):
        escape(object())


def test_string_operations_on_markup_give_text_that_is_escaped_again() -> None:
    fragment = Template("f", "<i>x</i>").render()
    assert escape(fragment + "") == "&lt;i&gt;x&lt;/i&gt;"
    assert escape(fragment[0:3]) == "&lt;i&gt;"


def test_every_template_file_loads_and_is_package_data() -> None:
    for name in ("page.html", "charts.svg"):
        assert fragments(name)  # loads, every slot in a safe place
        # found through importlib.resources, as in an installed wheel
        assert resources.files("axis_eval.report.html").joinpath("assets", name).is_file()


def test_markup_is_made_only_by_the_choke_point() -> None:
    """No module builds markup itself: ``Markup(`` only in ``_markup``, no f-string tags."""
    for path in HTML_PACKAGE.glob("*.py"):
        text = path.read_text()
        if path.name != "_markup.py":
            assert "Markup(" not in text, path.name
            assert not re.search(r"""f["'][^"'\n]*<[a-z/]""", text), path.name
        assert "html.escape" not in text or path.name == "_markup.py", path.name


def test_the_script_puts_data_into_the_dom_only_as_text() -> None:
    script = (HTML_PACKAGE / "assets" / "report.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink
    assert "new Function" not in script and "createContextualFragment" not in script
    # every insertion goes through append()/add(), which never writes out null
    assert re.findall(r"\.append\(", script) == []
    assert script.count(".appendChild(") == 1
    assert script.count("DOMParser") == 1  # the charts, cleaned by clean()


def test_a_str_enum_is_text_and_a_bool_is_refused() -> None:
    class Kind(StrEnum):
        BAD = "<b>"

    template = Template("t", '<p title="{{a}}">{{a}}</p>')
    assert template.render(a=Kind.BAD) == '<p title="&lt;b&gt;">&lt;b&gt;</p>'
    with pytest.raises(TypeError):
        template.render(a=True)  # not a number to show: a bug upstream
