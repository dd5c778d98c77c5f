// The duetime console: a few pages over the duetime HTTP API, called with fetch
// from the same origin. Every value the API returns is put in the page as text
// (text nodes, textContent, setAttribute): never parsed as HTML.
//
// This file holds what every page uses (building elements, times, the API, notices);
// forms.js, list.js, schedule.js, failed.js add the pages and main.js routes to them.
// They share one object, window.duetime.
"use strict";

(() => {
  const D = (window.duetime = window.duetime || {});
  const noticeBox = document.getElementById("notice");

  // --- building the page from values, as text ------------------------------------------

  // A character that would hide or reorder what is shown (controls, bidi overrides)
  // is written as \uXXXX instead.
  const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  const HIDDEN_IN_BLOCK = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function escaped(c) {
    return "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0");
  }
  function shown(value) {
    return String(value).replace(HIDDEN, escaped);
  }

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    add(node, children);
    return node;
  }

  function add(node, ...children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : shown(child));
    }
    return node;
  }

  function replace(node, ...children) {
    node.replaceChildren();
    return add(node, children);
  }

  function link(hash, text) {
    return el("a", { href: hash }, text);
  }

  function scheduleLink(id, text) {
    return link("#/schedules/" + encodeURIComponent(id), text === undefined ? id : text);
  }

  function badge(status) {
    const word = status === null || status === undefined ? "none" : String(status);
    const safe = /^[a-z_]+$/.test(word) ? word : "none";
    return el("span", { class: "badge s-" + safe, "data-status": word }, word);
  }

  function muted(text) {
    return el("span", { class: "muted" }, text);
  }

  function table(headings, rows, empty) {
    if (!rows.length) return el("p", { class: "muted" }, empty);
    return el(
      "table",
      {},
      el("thead", {}, el("tr", {}, headings.map((h) => el("th", {}, h)))),
      el("tbody", {}, rows),
    );
  }

  function dl(pairs) {
    const list = el("dl", { class: "grid" });
    for (const [term, value] of pairs) {
      if (value === null || value === undefined || value === "") continue;
      add(list, [el("dt", {}, term), el("dd", {}, value)]);
    }
    return list;
  }

  // A text that may hold JSON (a queue message's body): indented when it parses.
  function textBlock(text) {
    try {
      return pre(JSON.parse(text));
    } catch (error) {
      const block = el("pre", {});
      block.textContent = String(text).replace(HIDDEN_IN_BLOCK, escaped);
      return block;
    }
  }

  // JSON, indented: its line breaks are kept, any other hidden character escaped.
  function pre(value) {
    const block = el("pre", {});
    block.textContent = JSON.stringify(value, null, 2).replace(HIDDEN_IN_BLOCK, escaped);
    return block;
  }

  // A modal question: resolves true when the person confirms, false otherwise.
  function confirmDialog(id, title, body, confirmLabel, extra) {
    return new Promise((resolve) => {
      const yes = el("button", { type: "button", class: "danger", id: id + "-confirm" }, confirmLabel);
      const no = el("button", { type: "button", id: id + "-dismiss" }, "Keep it");
      const dialog = el("dialog", { id, class: "confirm" },
        el("h2", {}, title), el("p", {}, body), extra || null, el("div", { class: "buttons" }, yes, no));
      const close = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
      yes.addEventListener("click", () => close(true));
      no.addEventListener("click", () => close(false));
      dialog.addEventListener("cancel", (event) => { event.preventDefault(); close(false); });
      document.body.append(dialog);
      dialog.showModal();
    });
  }

  // --- time -----------------------------------------------------------------------------

  function instant(iso) {
    if (!iso) return "";
    return String(iso).replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  const formats = new Map();
  function zoneFormat(zone) {
    if (!formats.has(zone)) {
      let format = null;
      try {
        format = new Intl.DateTimeFormat("en-US", {
          timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit",
          minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "short",
        });
      } catch (error) {
        format = null; // a zone this browser does not know: shown in UTC only
      }
      formats.set(zone, format);
    }
    return formats.get(zone);
  }

  // An instant in a time zone, with its date and the zone's abbreviation:
  // "2027-03-14 03:00:00 EDT".
  function zoned(iso, zone) {
    const at = new Date(iso);
    const format = zone ? zoneFormat(zone) : null;
    if (!format || Number.isNaN(at.getTime())) return null;
    const p = Object.fromEntries(format.formatToParts(at).map((part) => [part.type, part.value]));
    return p.year + "-" + p.month + "-" + p.day + " " + p.hour + ":" + p.minute + ":" + p.second + " " + p.timeZoneName;
  }

  function relative(iso) {
    const at = Date.parse(iso);
    if (Number.isNaN(at)) return "";
    const seconds = Math.round((at - Date.now()) / 1000);
    const size = Math.abs(seconds);
    if (size < 1) return "now";
    const text =
      size < 90 ? size + " s"
      : size < 5400 ? Math.round(size / 60) + " min"
      : size < 172800 ? Math.round(size / 3600) + " h"
      : Math.round(size / 86400) + " d";
    return seconds >= 0 ? "in " + text : text + " ago";
  }

  // An instant as a person reads it: in the schedule's zone with its date, then in
  // UTC (when the zone is another), and how far from now.
  function when(iso, zone) {
    if (!iso) return muted("—");
    const local = zone && zone !== "UTC" ? zoned(iso, zone) : null;
    if (!local) {
      return el("span", { title: iso }, el("span", { class: "nowrap" }, instant(iso)), " ", muted("(" + relative(iso) + ")"));
    }
    return el("span", { title: iso, class: "when" },
      el("span", { class: "nowrap local" }, local), " ", el("span", { class: "muted nowrap" }, "(" + relative(iso) + ")"),
      el("br", {}), el("span", { class: "nowrap muted utc" }, instant(iso)));
  }

  function seconds(value) {
    if (value === null || value === undefined) return "";
    const n = Number(value);
    return n < 10 ? n.toFixed(2) + " s" : n < 120 ? n.toFixed(1) + " s" : Math.round(n / 60) + " min";
  }

  function nowIso(offsetS) {
    return new Date(Date.now() + (offsetS || 0) * 1000).toISOString().replace(/\.\d+Z$/, "Z");
  }

  // --- the API --------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message, field) {
      super(message);
      this.status = status;
      this.code = code;
      this.field = field;
    }
    get missing() {
      // The API this console talks to does not have the route (an older version).
      return (this.status === 404 && this.code === "no_route") || this.status === 405 || this.status === 501;
    }
    describe() {
      const where = this.field ? " (field: " + this.field + ")" : "";
      const status = this.status ? "HTTP " + this.status + " " : "";
      return status + this.message + where;
    }
  }

  function described(error) {
    return error instanceof ApiError ? error.describe() : String(error);
  }

  function query(path, params) {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(params || {})) {
      if (value !== null && value !== undefined && value !== "") search.set(key, value);
    }
    const text = search.toString();
    return text ? path + "?" + text : path;
  }

  async function api(method, path, body, headers) {
    const init = { method, headers: { Accept: "application/json", ...(headers || {}) } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      throw new ApiError(0, "unreachable", "cannot reach the API: " + error.message, null);
    }
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (error) {
      data = null;
    }
    if (!response.ok) {
      const detail = (data && data.error) || {};
      const message = detail.message || (data && data.message) || text.slice(0, 300) || response.statusText;
      throw new ApiError(response.status, detail.code || "http_" + response.status, message, detail.field || null);
    }
    return data;
  }

  // Every item of a paginated list, up to ten pages of 100.
  async function allPages(path, key) {
    const items = [];
    let token = null;
    for (let page = 0; page < 10; page++) {
      const answer = await api("GET", query(path, { limit: 100, next_token: token }));
      items.push(...answer[key]);
      token = answer.next_token;
      if (!token) break;
    }
    return items;
  }

  async function eachLimited(items, limit, work) {
    let next = 0;
    async function lane() {
      while (next < items.length) {
        const item = items[next++];
        await work(item);
      }
    }
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  }

  // --- notices and buttons --------------------------------------------------------------

  let noticeTimer = null;
  function notice(text, isError) {
    replace(noticeBox, text);
    noticeBox.className = isError ? "error" : "";
    noticeBox.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => { noticeBox.hidden = true; }, isError ? 15000 : 6000);
  }

  function failure(error) {
    return el("p", { class: "error" }, described(error));
  }

  function unavailable(what, error) {
    if (error instanceof ApiError && error.status === 501) {
      // The deployment answers that it cannot (dead letters, no DLQ setting): its reason.
      return el("p", { class: "muted" }, "Not available in this deployment: " + error.message);
    }
    if (error instanceof ApiError && error.missing) {
      return el("p", { class: "muted" }, "This API does not serve " + what + " (an older version?): " + error.describe());
    }
    return failure(error);
  }

  // A button that runs an API call, shows what happened, then refreshes the page.
  function action(label, run, props) {
    const button = el("button", { type: "button", ...(props || {}) }, label);
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const message = await run();
        if (message) notice(message, false);
      } catch (error) {
        notice(described(error), true);
      } finally {
        button.disabled = false;
        D.refreshNow();
      }
    });
    return button;
  }

  Object.assign(D, {
    shown, el, add, replace, link, scheduleLink, badge, muted, table, dl, textBlock, pre, confirmDialog,
    instant, zoned, relative, when, seconds, nowIso,
    ApiError, described, query, api, allPages, eachLimited, enc: encodeURIComponent,
    notice, failure, unavailable, action,
  });
})();
