// axis-eval HTML report. The summary is static HTML; this script makes it interactive and
// renders a pair's detail and its transcripts only when they are opened, from gzip+base64
// payloads decoded with DecompressionStream (no network: it works from file://).
// Data is always rendered as text (text nodes, attribute values: see append); the only markup
// taken from a payload is the charts, which the Python renderer drew and escaped (see svg).
"use strict";
(function () {
  var PAYLOAD_TYPE = "application/x-axis-gzip";
  var TRANSCRIPT_PAGE = 200; // entries rendered per "show more"
  var INTERACTION_PAGE = 100;
  var payloadElements = null;
  var decoded = new Map();

  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        var value = attrs[key];
        if (value === null || value === undefined || value === false) return;
        if (key === "class") el.className = value;
        else if (key === "href") el.setAttribute("href", safeHref(value));
        else el.setAttribute(key, value === true ? "" : String(value));
      });
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }

  // The one way content enters the DOM: nodes as they are, anything else as a text node
  // (never parsed as markup); null, undefined and false add nothing (el.append would
  // write them out as "null").
  function append(el) {
    for (var i = 1; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }

  function add(el, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { kid.forEach(function (k) { add(el, k); }); return; }
    el.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }

  // Links in payloads are relative file paths the renderer made; refuse anything with a
  // scheme. Browsers drop tabs and newlines anywhere in a URL and control characters and
  // spaces before it, so those are dropped before looking ("java\tscript:" is a scheme).
  function safeHref(value) {
    var text = String(value).replace(/[\t\n\r]/g, "").replace(/^[\u0000-\u0020]+/, "");
    return /^([a-z][a-z0-9+.-]*:|[\/\\]{2})/i.test(text) ? "#" : text;
  }

  // The charts are the only markup a payload carries: drawn by the renderer from escaping
  // templates, parsed as SVG (an XML parser: no HTML parsing quirks), and kept only as the
  // elements and attributes a chart has, so even a renderer bug could not bring in a script.
  var SVG_ELEMENTS = ["svg", "title", "desc", "line", "text", "rect", "circle"];
  var SVG_ATTRIBUTES = ["xmlns", "class", "role", "viewBox", "width", "height", "aria-label",
    "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "text-anchor"];

  function svg(markup) {
    if (!markup) return null;
    var doc = new DOMParser().parseFromString(markup, "image/svg+xml");
    var root = doc.documentElement;
    if (!root || root.nodeName !== "svg" || !clean(root)) return null;
    return document.importNode(root, true);
  }

  function clean(el) {
    if (SVG_ELEMENTS.indexOf(el.nodeName) < 0) return false;
    Array.prototype.slice.call(el.attributes).forEach(function (a) {
      if (SVG_ATTRIBUTES.indexOf(a.name) < 0) el.removeAttribute(a.name);
    });
    Array.prototype.slice.call(el.children).forEach(function (kid) {
      if (!clean(kid)) el.removeChild(kid);
    });
    return true;
  }

  function payload(id) {
    if (!decoded.has(id)) {
      decoded.set(id, decode(id));
    }
    return decoded.get(id);
  }

  // The script sits before the payload elements (so the summary is interactive while the
  // parser still reads megabytes of payloads): a payload is used once the parser has moved
  // past its element (a later sibling exists), otherwise when the document is parsed.
  function payloadElement(id) {
    if (document.readyState === "loading") {
      var el = document.querySelector('script[type="' + PAYLOAD_TYPE + '"][data-payload="' + id + '"]');
      if (el && el.nextElementSibling) return Promise.resolve(el);
      return new Promise(function (resolve) {
        document.addEventListener("DOMContentLoaded", function () { resolve(payloadElement(id)); }, { once: true });
      });
    }
    if (payloadElements === null) {
      payloadElements = new Map();
      document.querySelectorAll('script[type="' + PAYLOAD_TYPE + '"]').forEach(function (el) {
        payloadElements.set(el.getAttribute("data-payload"), el);
      });
    }
    return Promise.resolve(payloadElements.get(id) || null);
  }

  function decode(id) {
    return payloadElement(id).then(function (el) {
      if (!el) throw new Error("payload " + id + " is missing");
      return inflate(el);
    });
  }

  function inflate(el) {
    var binary = atob(el.textContent.trim());
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }

  // ---- formatting -------------------------------------------------------------------------

  function band(score) {
    if (score === null || score === undefined) return "band-none";
    return score >= 90 ? "band-90" : score >= 75 ? "band-75" : score >= 50 ? "band-50" : "band-0";
  }

  function ms(value) {
    if (value === null || value === undefined) return "?";
    if (value < 1000) return value + "ms";
    if (value < 60000) return (value / 1000).toFixed(1) + "s";
    var s = Math.floor((value % 60000) / 1000);
    return Math.floor(value / 60000) + "m" + (s < 10 ? "0" : "") + s + "s";
  }

  function bytes(n) {
    if (n < 1024) return n + "B";
    if (n < 1048576) return (n / 1024).toFixed(1) + "KB";
    return (n / 1048576).toFixed(1) + "MB";
  }

  // Usage answered by the scripted model server spent nothing: never a dollar figure.
  function money(value, estimated, simulated) {
    if (simulated) return "simulated";
    if (value === null || value === undefined) return "–";
    return (estimated ? "≈" : "") + "$" + Number(value).toFixed(4);
  }

  function dash(value) {
    return value === null || value === undefined || value === "" ? "–" : String(value);
  }

  function pct(unit) {
    return Math.round(unit * 100);
  }

  function table(headers, rows, cls) {
    return h("table", { class: "grid " + (cls || "") },
      h("thead", null, h("tr", null, headers.map(function (x) { return h("th", { scope: "col" }, x); }))),
      h("tbody", null, rows));
  }

  function scoreCell(value) {
    return h("td", { class: "num " + band(value) }, dash(value));
  }

  function pre(text, cls) {
    return h("pre", { class: cls || null }, text);
  }

  function json(value) {
    return JSON.stringify(value, null, 2);
  }

  function collapsible(label, content, open) {
    return h("details", { open: !!open }, h("summary", null, label), content);
  }

  // ---- a pair's detail --------------------------------------------------------------------

  var DIMS = [["axisScore", "AXIS"], ["goalAchievement", "Goal"], ["environment", "Env"],
    ["service", "Svc"], ["agent", "Agent"]];

  function renderPair(details, data) {
    var body = h("div", { class: "pair-body" });
    append(body, h("p", { class: "muted" }, data.name + " · adapter " + data.adapter +
      (data.model ? " · model " + data.model : "") + " · " + data.status));
    if (data.error) append(body, h("div", { class: "banner", role: "alert" }, data.error));
    if (data.withheldReason) append(body, h("div", { class: "banner" }, "Score withheld: " + data.withheldReason));
    append(body, headline(data));
    if (data.baseline) append(body, baseline(data.baseline));
    append(body, h("h3", null, "Runs"), runsTable(data));
    if (data.checks.length) append(body, h("h3", null, "Goal checks (representative)"), checks(data.checks));
    if (Object.keys(data.categories).length) append(body, h("h3", null, "Environment, service, agent"), categories(data.categories));
    if (data.insights.length || data.notes.length) {
      append(body, h("h3", null, "Insights"),
        h("ul", null, data.insights.map(function (x) { return h("li", null, x); }),
          data.notes.map(function (x) { return h("li", { class: "muted" }, x); })));
    }
    if (data.charts.waterfall) {
      append(body, h("h3", null, "Waterfall (representative)"),
        h("p", { class: "legend" },
          h("span", null, h("i", { class: "env" }), "environment"),
          h("span", null, h("i", { class: "svc" }), "service"),
          h("span", null, h("i", { class: "agent" }), "agent"),
          h("span", null, h("i", { class: "err" }), "error"),
          h("span", { class: "muted" }, "faded: slow or very slow for its category")),
        h("figure", { class: "chart-figure" }, svg(data.charts.waterfall),
          h("figcaption", null, data.charts.waterfallText)));
    }
    if (data.interactions.length) {
      append(body, h("h3", null, "Interactions and signals (representative)"));
      if (data.sparse.length) append(body, pre(data.sparse.join("\n"), "muted"));
      append(body, interactions(data.interactions));
    }
    append(body, h("h3", null, "Transcripts"));
    data.runs.forEach(function (run) { append(body, transcriptBlock(run)); });
    data.runs.forEach(function (run) { append(body, runExtras(run, data.runs.length > 1)); });
    append(body, h("h3", null, "Configuration"),
      h("p", null, "Prompt"), pre(data.config.prompt),
      collapsible("Judge / rubric", pre(typeof data.config.judge === "string" ? data.config.judge : json(data.config.judge))),
      collapsible("Agent configuration", pre(json(data.config.agentConfig))),
      collapsible("Resolved pair configuration", pre(json(data.config.resolvedConfig))));
    append(details, body);
  }

  function headline(data) {
    var rep = data.runs.find(function (r) { return r.representative; });
    var box = h("div", { class: "headline" });
    var scores = rep && rep.scores;
    append(box, table(DIMS.map(function (d) { return d[1]; }),
      h("tr", null, DIMS.map(function (d) { return scoreCell(scores ? scores[d[0]] : null); })), "scores"));
    var facts = [];
    if (rep) facts.push("representative run #" + rep.index);
    if (data.spread) {
      var s = data.spread.axisScore;
      facts.push("median " + s.median + " · range " + s.min + "–" + s.max +
        " · σ " + (s.stdev === null ? "–" : s.stdev.toFixed(1)) + " over " + data.spread.n + " scored");
    }
    if (data.reliability) {
      facts.push("reliability " + data.reliability.succeeded + "/" + data.reliability.total +
        (data.reliability.withheld ? " (" + data.reliability.withheld + " withheld)" : ""));
    }
    var pr = data.passRates;
    if (pr && pr.n) {
      var k = pr.passAtK.length;
      facts.push("pass@" + k + " " + pr.passAtK[k - 1].toFixed(2) + " · pass^" + k + " " +
        pr.passHatK[k - 1].toFixed(2) + " · " + pr.passed + "/" + pr.n + " ≥ " + pr.passScore +
        (pr.gateFailed ? " · below the minimum pass rate " + pr.minPassRate : ""));
    }
    append(box, h("p", null, facts.join(" · ")));
    (data.statsLines || []).forEach(function (line) { append(box, h("p", { class: "stats" }, line)); });
    if (data.charts.distribution) {
      append(box, h("figure", { class: "chart-figure" }, svg(data.charts.distribution),
        h("figcaption", null, data.charts.distributionText)));
    }
    return box;
  }

  function baseline(b) {
    var rows = [h("tr", null, h("th", { scope: "row" }, "AXIS"), h("td", { class: "num" }, b.baseline),
      h("td", { class: "num" }, dash(b.current)), h("td", { class: "num" }, b.delta === null ? "–" : signed(b.delta)))];
    Object.keys(b.categories || {}).forEach(function (name) {
      var c = b.categories[name];
      rows.push(h("tr", null, h("th", { scope: "row" }, name), h("td", { class: "num" }, c.baseline),
        h("td", { class: "num" }, dash(c.current)), h("td", { class: "num" }, c.delta === null ? "–" : signed(c.delta))));
    });
    var rel = b.reliability;
    return h("div", { class: "baseline" },
      h("h3", null, "Against baseline " + b.baselineName),
      h("p", { class: "delta " + (b.regressed ? "regressed" : b.verdict) },
        (b.regressed ? "regressed" : b.verdict) + " · noise band ±" + b.band +
        (b.noiseMeasured ? "" : " (noise unmeasured: single-run baseline)") +
        " · runs " + b.baselineRuns + " → " + b.currentRuns +
        (b.pValue !== null ? " · p = " + b.pValue.toFixed(3) + " (" + b.pValueMethod + ")" : "") +
        " · reliability " + rel.baseline.succeeded + "/" + rel.baseline.total + " → " +
        rel.current.succeeded + "/" + rel.current.total + (rel.regressed ? " (regressed)" : "")),
      table(["", "baseline", "now", "Δ"], rows));
  }

  function signed(x) {
    var v = Math.round(x * 10) / 10;
    return (v > 0 ? "+" : "") + v;
  }

  function runsTable(data) {
    var rows = data.runs.map(function (run) {
      var t = run.tokens;
      var j = run.judge;
      return h("tr", { class: "run-row", "data-run-index": run.index,
        "data-representative": run.representative ? "true" : null },
        h("th", { scope: "row" }, "#" + run.index, run.representative ? h("span", { class: "rep-mark", title: "representative run" }, " ★ representative") : null),
        h("td", null, run.status + (run.errorKind ? " (" + run.errorKind + ")" : "") +
          (run.withheld ? " · score withheld" : ""),
          run.sandbox ? h("span", { class: "muted sandbox", title: "what confined the run" }, " · " + run.sandbox) : null),
        DIMS.map(function (d) { return scoreCell(run.scores ? run.scores[d[0]] : null); }),
        h("td", { class: "num" }, ms(run.durationMs)),
        h("td", { class: "num", title: t ? "cache read " + t.cacheReadInput + ", cache write " + t.cacheWriteInput : null },
          t ? t.input + " in / " + t.output + " out" : "–"),
        h("td", { class: "num", title: run.costSimulated ? "the scripted model server answered: no tokens spent" : run.costEstimated ? "estimated from a price table" : null }, money(run.cost, run.costEstimated, run.costSimulated)),
        h("td", { class: "num", title: j ? (j.judge || "") + " " + (j.model || "") + " · " + j.cachedCalls + " cached" : null },
          j ? j.calls + " calls · " + j.inputTokens + "/" + j.outputTokens + " tok · " + money(j.costUsd, j.costEstimated, j.costSimulated) : "–"),
        h("td", null, run.error ? run.error : (run.withheldReason || "")));
    });
    return table(["Run", "Status"].concat(DIMS.map(function (d) { return d[1]; }),
      ["Duration", "Agent tokens", "Agent cost", "Judge", "Error"]), rows, "runs");
  }

  function checks(list) {
    return table(["Check", "Kind", "Weight", "Score", "Rationale"], list.map(function (c) {
      var extra = null;
      if (c.kind === "deterministic") {
        extra = h("div", { class: "muted" }, h("code", null, c.command || ""), " → exit " + dash(c.exitCode));
        if (c.output) append(extra, collapsible("output", pre(c.output)));
      }
      return h("tr", null, h("td", null, c.check), h("td", null, c.kind),
        h("td", { class: "num" }, c.weight), h("td", { class: "num " + band(c.score * 10) }, c.score + "/10"),
        h("td", null, c.rationale, extra));
    }));
  }

  var SIGNALS = ["success", "speed", "weight", "relevance", "necessity"];

  function categories(cats) {
    var names = ["environment", "service", "agent"].filter(function (n) { return cats[n]; });
    return table(["Category", "Score", "Interactions", "Audited"].concat(SIGNALS, ["Weakest", "Unnecessary", "Necessity rationale"]),
      names.map(function (n) {
        var c = cats[n];
        return h("tr", null, h("th", { scope: "row" }, n), scoreCell(c.score),
          h("td", { class: "num" }, c.interactions), h("td", { class: "num" }, c.audited),
          SIGNALS.map(function (s) { return sig(c.signals[s]); }),
          h("td", null, c.weakestSignal + (c.weakestIds.length ? " (#" + c.weakestIds.join(", #") + ")" : "")),
          h("td", null, c.unnecessaryIds.length ? "#" + c.unnecessaryIds.join(", #") : "–"),
          h("td", null, c.necessityRationale || ""));
      }));
  }

  function sig(unit) {
    return h("td", { class: "num" + (unit < 0.75 ? " sig-low" : "") }, pct(unit));
  }

  function interactions(list) {
    var tbody = h("tbody");
    var shown = 0;
    var more = h("button", { type: "button" });
    function page() {
      list.slice(shown, shown + INTERACTION_PAGE).forEach(function (it) {
        append(tbody, h("tr", { class: "interaction-row", "data-interaction": it.id },
          h("th", { scope: "row" }, "#" + it.id), h("td", null, it.categories.join(",")),
          h("td", null, it.tool), h("td", { class: "mono" }, it.detail),
          h("td", { class: "num" }, ms(it.startMs)), h("td", { class: "num" }, ms(it.durationMs)),
          h("td", null, it.tier), sig(it.success), sig(it.weight), sig(it.relevance),
          h("td", null, (it.error ? h("span", { class: "tool-error" }, "error ") : null),
            it.audited ? it.rationale : h("span", { class: "muted" }, "not audited (defaults)"))));
      });
      shown = Math.min(list.length, shown + INTERACTION_PAGE);
      more.textContent = "Show more (" + (list.length - shown) + " left)";
      more.hidden = shown >= list.length;
    }
    more.addEventListener("click", page);
    page();
    var heads = ["#", "Category", "Tool", "Detail", "Start", "Duration", "Speed tier", "Success", "Weight", "Relevance", "Judge's rationale"];
    return h("div", null, h("table", { class: "grid interactions" },
      h("thead", null, h("tr", null, heads.map(function (x) { return h("th", { scope: "col" }, x); }))), tbody), more);
  }

  function transcriptBlock(run) {
    var box = h("div", { class: "run-transcript", "data-run-index": run.index });
    var label = "Run #" + run.index + (run.representative ? " (representative)" : "");
    if (!run.hasTranscript) {
      append(box, h("p", { class: "muted" }, label + ": no transcript recorded"));
      return box;
    }
    append(box, h("p", null, label + " ",
      h("button", { type: "button", "data-action": "show-transcript", "data-run-index": run.index,
        "aria-expanded": "false" }, "Show transcript")));
    append(box, h("div", { class: "transcript", "data-run-index": run.index }));
    return box;
  }

  function runExtras(run, many) {
    var prefix = many ? "Run #" + run.index + ": " : "";
    var parts = [];
    if (run.result) parts.push(h("h3", null, prefix + "Final answer"), pre(run.result));
    if (run.setupOutput) parts.push(h("h3", null, prefix + "Setup notes"), pre(run.setupOutput, "notes"));
    if (run.teardownOutput) parts.push(h("h3", null, prefix + "Teardown notes"), pre(run.teardownOutput, "notes"));
    if (run.warnings.length) parts.push(h("h3", null, prefix + "Warnings"), h("ul", null, run.warnings.map(function (w) { return h("li", null, w); })));
    if (run.artifacts.length) {
      parts.push(h("h3", null, prefix + "Artifacts"), table(["Path", "Size", "Type", "Content"],
        run.artifacts.map(function (a) {
          return h("tr", null, h("td", null, h("a", { href: a.href }, a.path)), h("td", { class: "num" }, bytes(a.size)),
            h("td", null, a.mime), h("td", null, a.content !== null ? collapsible("show", pre(a.content)) : h("span", { class: "muted" }, "linked (too large to inline)")));
        })));
    }
    if (run.files.length) {
      parts.push(h("p", { class: "muted" }, prefix + "Files: ", run.files.map(function (f, i) {
        return [i ? " · " : "", h("a", { href: f.href }, f.name)];
      })));
    }
    return h("div", { class: "run-extras", "data-run-index": run.index }, parts);
  }

  // ---- transcripts ------------------------------------------------------------------------

  function renderTranscript(target, data) {
    var entries = data.entries;
    var shown = 0;
    var more = h("button", { type: "button", class: "more" });
    var list = h("div", { class: "entries" });
    function page() {
      entries.slice(shown, shown + TRANSCRIPT_PAGE).forEach(function (e) { append(list, entry(e)); });
      shown = Math.min(entries.length, shown + TRANSCRIPT_PAGE);
      more.textContent = "Show more (" + (entries.length - shown) + " entries left)";
      more.hidden = shown >= entries.length;
    }
    more.addEventListener("click", page);
    append(target, h("p", { class: "muted" }, entries.length + " entries · " + ms(data.durationMs) +
      (data.agentVersion ? " · agent " + data.agentVersion : "") + (data.model ? " · model " + data.model : "")), list, more);
    page();
  }

  function entry(e) {
    var el = h("div", { class: "entry entry-" + e.type });
    var head = h("div", { class: "entry-head" }, e.type + " · +" + ms(e.ms));
    append(el, head);
    if (e.text !== undefined) append(el, h("div", { class: "entry-text" }, e.text));
    var t = e.tool;
    if (t) {
      append(head, " · ", h("strong", null, t.name), t.durationMs !== null ? " · " + ms(t.durationMs) : "",
        t.error ? h("span", { class: "tool-error" }, " · error") : null);
      if (t.input !== null) append(el, collapsible("input (" + bytes(t.inputBytes) + ")", pre(t.input)));
      append(el, t.output !== null ? collapsible("output (" + bytes(t.outputBytes) + ")", pre(t.output))
        : h("div", { class: "muted" }, "no output recorded"));
    }
    return el;
  }

  function showTranscript(button) {
    var details = button.closest("[data-pair-detail]");
    var index = button.getAttribute("data-run-index");
    var target = details.querySelector('.transcript[data-run-index="' + index + '"]');
    if (button.getAttribute("aria-expanded") === "true") {
      target.hidden = !target.hidden;
      button.textContent = target.hidden ? "Show transcript" : "Hide transcript";
      return;
    }
    button.disabled = true;
    payload(details.getAttribute("data-transcripts")).then(function (all) {
      renderTranscript(target, all[index]);
      button.setAttribute("aria-expanded", "true");
      button.textContent = "Hide transcript";
      button.disabled = false;
    }, function (error) { fail(target, error); });
  }

  function fail(target, error) {
    append(target, h("div", { class: "banner" }, "Could not decode this part of the report: " + error));
  }

  // ---- wiring -----------------------------------------------------------------------------

  function openPair(details) {
    if (details.getAttribute("data-rendered")) return;
    details.setAttribute("data-rendered", "pending");
    payload(details.getAttribute("data-payload")).then(function (data) {
      renderPair(details, data);
      details.setAttribute("data-rendered", "true");
    }, function (error) { fail(details, error); });
  }

  function openConfig(details) {
    if (details.getAttribute("data-rendered")) return;
    details.setAttribute("data-rendered", "pending");
    payload("config").then(function (data) {
      append(details, pre(json(data)));
      details.setAttribute("data-rendered", "true");
    }, function (error) { fail(details, error); });
  }

  document.addEventListener("toggle", function (event) {
    var el = event.target;
    if (!(el instanceof HTMLDetailsElement) || !el.open) return;
    if (el.hasAttribute("data-pair-detail")) openPair(el);
    else if (el.id === "config") openConfig(el);
  }, true);

  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    var button = target.closest('button[data-action="show-transcript"]');
    if (button) { showTranscript(button); return; }
    var link = target.closest("a.pair-link");
    if (link) {
      var details = document.getElementById(link.getAttribute("href").slice(1));
      if (details) details.open = true;
    }
  });

  var filter = document.getElementById("pair-filter");
  if (filter) {
    var rows = Array.prototype.slice.call(document.querySelectorAll("#summary tr.pair-row"));
    var count = document.getElementById("filter-count");
    filter.addEventListener("input", function () {
      var needle = filter.value.trim().toLowerCase();
      var visible = 0;
      rows.forEach(function (row) {
        var hay = (row.getAttribute("data-scenario") + " " + row.getAttribute("data-agent")).toLowerCase();
        row.hidden = needle !== "" && hay.indexOf(needle) < 0;
        if (!row.hidden) visible++;
      });
      count.textContent = needle ? visible + " of " + rows.length + " pairs" : "";
    });
  }

  if (location.hash.indexOf("#pair-") === 0) {
    var initial = document.getElementById(location.hash.slice(1));
    if (initial) initial.open = true;
  }

  performance.mark("axis:summary-rendered");
})();
