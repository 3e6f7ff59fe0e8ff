"""The one redactor (harness reports, judge prompts, the task runner's logs and endpoints).

One :class:`Redactor` class, two rules: the harness keeps its substring name rule and
4-character values, the task runner its whole-word rule and 6-character values.
"""

from __future__ import annotations

import json
import re

from axis_eval.redact import HARNESS, MASK, RUNNER, Redactor, looks_secret, runner_secret_name

OLD_HARNESS_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE)",
    re.IGNORECASE,
)
"""The harness's rule before the two redactors became one: it may grow, never shrink."""

ORDINARY_ENV = {"XDG_SESSION_CLASS": "user", "SESSION": "main", "HF_AUTH": "none"}
ORDINARY_LINE = "git clone as user from main branch: none"


def test_harness_rule_masks_a_secret_word_anywhere_in_the_name() -> None:
    for name in ("GEMINI_API_KEY", "OPENAI_APIKEY", "GH_TOKEN", "gh-token", "DB_PASSWORD",
                 "DBPASSWORD", "HF_AUTH", "SESSION_ID", "AWS_SECRET_ACCESS_KEY", "Authorization",
                 "X-Api-Key", "COOKIE", "PRIVATE_KEY_PATH", "X_SIGNATURE",
                 # substrings, not words: none of these may slip into a report or a prompt
                 "SESSIONID", "PASSWORD1", "SECRET2", "CLIENTSECRETS", "APIKEYS",
                 "ACCESSTOKENVALUE", "AUTHTOKEN2", "OAUTH_CLIENT", "PASSPORT", "DB_PASS",
                 "XDG_SESSION_CLASS", "SESSION", "COOKIES", "MYKEY",
                 # the old harness masked these too, so no allow-list spares them
                 "KEYBOARD_LAYOUT", "TOKENIZERS_PARALLELISM", "AUTHOR_NAME"):  # fmt: skip
        assert looks_secret(name), name
        assert HARNESS.is_secret_name(name), name
    for name in ("PATH", "HOME", "PWD", "LANG", "AX_METADATA_URL", "GIT_REF"):
        assert not looks_secret(name), name


def test_harness_rule_covers_the_old_one() -> None:
    words = OLD_HARNESS_NAME.pattern.strip("()").split("|")
    for word in words:
        for name in (word, word.lower(), f"X{word}Y", f"my_{word.lower()}_2", f"{word}S"):
            assert OLD_HARNESS_NAME.search(name) and looks_secret(name), name


def test_runner_rule_is_the_old_runner_rule() -> None:
    for name in ("GEMINI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY",
                 "HF_AUTH", "OPENAI_APIKEY", "gh-token", "MYTOKEN", "DBPASSWORD", "CLIENTSECRET",
                 "X_SIGNATURE", "PRIVATE_KEY_PATH", "Authorization", "COOKIE", "CREDENTIALS",
                 "PASSPHRASE", "SECRETS", "API_KEY_FILE", "X-Api-Key"):  # fmt: skip
        assert runner_secret_name(name), name
        assert RUNNER.is_secret_name(name), name
    # Words the old runner never treated as secret: its logs must keep these values.
    for name in ("PATH", "HOME", "PWD", "KEYBOARD_LAYOUT", "AX_METADATA_URL", "TOKENIZERS_X",
                 "XDG_SESSION_CLASS", "SESSION", "SESSION_ID", "DB_PASS", "API_KEYS", "TOKENS",
                 "COOKIES", "MYKEY", "AUTHOR_NAME", "PASSPORT"):  # fmt: skip
        assert not runner_secret_name(name), name


def test_runner_keeps_ordinary_words_of_its_log_lines() -> None:
    from ax_task_runner.logs import is_secret_name, redactor

    assert redactor.rule is RUNNER and is_secret_name is runner_secret_name
    redact = Redactor(rule=RUNNER)
    redact.add_environment({**ORDINARY_ENV, "GH_TOKEN": "ghp-abcdef", "MY_KEY": "abcde"})
    assert redact(ORDINARY_LINE) == ORDINARY_LINE
    # What the old runner masked: secret-named values of 6+ characters, URL passwords.
    assert redact("push ghp-abcdef as abcde") == f"push {MASK} as abcde"
    assert redact("https://me:pw@host/x") == f"https://me:{MASK}@host/x"
    # The harness, which never learns the whole environment, masks all three.
    harness = Redactor.from_env(ORDINARY_ENV, ORDINARY_ENV)
    assert MASK in harness(ORDINARY_LINE)
    assert not {"user", "main", "none"} & set(re.findall(r"\w+", harness(ORDINARY_LINE)))


def test_minimum_length_per_caller() -> None:
    assert (HARNESS.min_length, RUNNER.min_length) == (4, 6)
    values = ["abc", "abcd", "abcde", "abcdef"]
    assert Redactor(values)("abc abcd abcde abcdef") == f"abc {MASK} {MASK} {MASK}"
    assert Redactor(values, rule=RUNNER)("abc abcd abcde abcdef") == f"abc abcd abcde {MASK}"


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
    assert Redactor(rule=RUNNER).merged(["abcde"]).rule is RUNNER
