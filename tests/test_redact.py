"""The one redactor (harness reports, judge prompts, the task runner's logs and endpoints)."""

from __future__ import annotations

import json

from axis_eval.redact import MASK, Redactor, looks_secret


def test_secret_names_are_judged_by_their_words() -> None:
    for name in ("GEMINI_API_KEY", "OPENAI_APIKEY", "GH_TOKEN", "gh-token", "DB_PASSWORD",
                 "DBPASSWORD", "HF_AUTH", "SESSION_ID", "AWS_SECRET_ACCESS_KEY", "Authorization",
                 "X-Api-Key", "COOKIE", "PRIVATE_KEY_PATH"):  # fmt: skip
        assert looks_secret(name), name
    for name in ("PATH", "HOME", "KEYBOARD_LAYOUT", "TOKENIZERS_PARALLELISM", "AUTHOR_NAME"):
        assert not looks_secret(name), name


def test_known_values_and_url_passwords_are_masked() -> None:
    redact = Redactor(["s3cret-value", "abc", "true"])  # too short and flag-like: kept
    assert redact.text("a s3cret-value b abc true") == f"a {MASK} b abc true"
    assert redact("git https://me:pw@host/x ssh://git@host") == (
        f"git https://me:{MASK}@host/x ssh://git@host"
    )
    assert Redactor().text("postgres://app:pw@db/app") == f"postgres://app:{MASK}@db/app"


def test_json_escaped_forms_are_masked_too() -> None:
    secret = 'quo"te\\slash'
    text = json.dumps({"v": f"x {secret} y"})
    assert secret not in json.loads(Redactor([secret]).json_text(text))["v"]
    assert Redactor([secret]).data({"a": [f"<{secret}>", 3]}) == {"a": [f"<{MASK}>", 3]}


def test_add_teaches_it_more_and_merged_leaves_it_alone() -> None:
    redact = Redactor()
    redact.add_environment({"MY_TOKEN": "tok-123456", "PATH": "/usr/bin"})
    assert redact("tok-123456 /usr/bin") == f"{MASK} /usr/bin"
    wider = redact.merged(["other-secret"])
    assert wider("other-secret tok-123456") == f"{MASK} {MASK}"
    assert redact("other-secret") == "other-secret"
