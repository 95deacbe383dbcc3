"""The site's only script and style sheet, written once at the site root.

Plain JavaScript (no framework, no module syntax: ES modules do not load from ``file://``) and
no network access of any kind: filters hide table rows by their ``data-*`` attributes and a
button opens or closes every collapsible block of a conversation.
"""

from __future__ import annotations

VIEWER_JS = """\
"use strict";
// apiflow viewer: table filters and expand/collapse. No network, no framework; works from file://.
(function () {
  function matches(el, active) {
    for (const [name, value] of active) {
      const have = el.getAttribute("data-" + name);
      if (have !== null && have !== value) return false;
    }
    return true;
  }

  // A row is shown when its own attributes match and, if it holds trial chips, at least one
  // chip matches (chips that do not match are hidden).
  function apply(form) {
    const target = document.getElementById(form.dataset.for);
    if (!target) return;
    const active = [];
    for (const select of form.querySelectorAll("select")) {
      if (select.value) active.push([select.name, select.value]);
    }
    let rows = 0, shown = 0, trials = 0;
    for (const row of target.querySelectorAll("tbody tr.item")) {
      rows++;
      let visible = matches(row, active);
      const chips = row.querySelectorAll(".chip");
      if (chips.length) {
        let matching = 0;
        for (const chip of chips) {
          const ok = matches(chip, active);
          chip.hidden = !ok;
          if (ok) matching++;
        }
        visible = visible && matching > 0;
        if (visible) trials += matching;
      } else if (visible) {
        trials++;
      }
      row.hidden = !visible;
      if (visible) shown++;
    }
    const count = document.querySelector('[data-count-for="' + form.dataset.for + '"]');
    if (count) count.textContent = "showing " + shown + " of " + rows + " rows (" + trials + " trials)";
  }

  function toggleAll(button) {
    const blocks = document.querySelectorAll(".conversation details");
    const open = button.textContent === "expand all";
    for (const block of blocks) block.open = open;
    button.textContent = open ? "collapse all" : "expand all";
  }

  document.addEventListener("DOMContentLoaded", function () {
    for (const form of document.querySelectorAll("form.filters")) {
      form.addEventListener("change", function () { apply(form); });
      form.addEventListener("submit", function (event) { event.preventDefault(); });
      apply(form);
    }
    for (const button of document.querySelectorAll("[data-toggle-all]")) {
      button.addEventListener("click", function () { toggleAll(button); });
    }
  });
})();
"""

VIEWER_CSS = """\
[hidden] { display: none !important; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 78em; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; margin: .3em 0 .6em; word-break: break-word; }
h2 { font-size: 1.15em; margin-top: 1.6em; }
nav.crumbs { color: #666; margin-bottom: .4em; word-break: break-word; }
a { color: #0b57d0; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border-bottom: 1px solid #e3e3e3; padding: .25em .6em; text-align: left; vertical-align: top; }
thead th { background: #f4f4f4; }
table.facts th { width: 11em; color: #555; font-weight: 600; }
code, pre { font: 12.5px/1.4 ui-monospace, monospace; }
pre { white-space: pre-wrap; word-break: break-word; margin: .3em 0; }
.badge { padding: .05em .5em; border-radius: .7em; font-weight: 600; font-size: .9em; }
.s-pass { background: #d7f5dd; color: #0d6b26; }
.s-fail { background: #fde0de; color: #a3160b; }
.s-unscored, .s-harness { background: #ececec; color: #555; }
.ok { color: #0d6b26; font-weight: 700; }
.no { color: #a3160b; font-weight: 700; }
.chip { display: inline-block; min-width: 1.6em; text-align: center; margin: 0 .15em; border-radius: .3em;
        text-decoration: none; font-weight: 600; }
tr.pred.fail { background: #fff4f3; }
td .k { color: #777; font-size: .85em; margin-right: .3em; }
form.filters label { margin-right: 1em; }
p.count { color: #555; }
.conversation .msg { border-left: 3px solid #ccc; margin: .6em 0; padding: .2em .8em; }
.msg.r-user { border-color: #0b57d0; }
.msg.r-assistant { border-color: #7a3db8; }
.msg.r-tool { border-color: #999; }
.msg .role { color: #666; font-size: .85em; }
details > summary { cursor: pointer; color: #333; word-break: break-word; }
details.result.error > summary { color: #a3160b; }
details.reasoning > summary { color: #7a3db8; }
.reason { word-break: break-word; }
"""
