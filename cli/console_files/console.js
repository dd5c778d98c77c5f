// The duetime console: a few pages over the duetime HTTP API, called with fetch
// from the same origin. Every value the API returns is put in the page as text
// (text nodes, textContent, setAttribute): never parsed as HTML.
"use strict";

(() => {
  const REFRESH_MS = 4000;
  const RUN_STATUSES = ["failed", "expired"];
  const main = document.getElementById("main");
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

  // JSON, indented: its line breaks are kept, any other hidden character escaped.
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

  function pre(value) {
    const block = el("pre", {});
    block.textContent = JSON.stringify(value, null, 2).replace(HIDDEN_IN_BLOCK, escaped);
    return block;
  }

  // --- time -----------------------------------------------------------------------------

  function instant(iso) {
    if (!iso) return "";
    return String(iso).replace("T", " ").replace(/\.\d+Z$/, "Z");
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

  function when(iso) {
    if (!iso) return muted("—");
    return el("span", { title: iso }, el("span", { class: "nowrap" }, instant(iso)), " ", muted("(" + relative(iso) + ")"));
  }

  function seconds(value) {
    if (value === null || value === undefined) return "";
    const n = Number(value);
    return n < 10 ? n.toFixed(2) + " s" : n < 120 ? n.toFixed(1) + " s" : Math.round(n / 60) + " min";
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

  const enc = encodeURIComponent;

  // --- notices --------------------------------------------------------------------------

  let noticeTimer = null;
  function notice(text, isError) {
    replace(noticeBox, text);
    noticeBox.className = isError ? "error" : "";
    noticeBox.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => { noticeBox.hidden = true; }, isError ? 15000 : 6000);
  }

  function failure(error) {
    return el("p", { class: "error" }, error instanceof ApiError ? error.describe() : String(error));
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
        notice(error instanceof ApiError ? error.describe() : String(error), true);
      } finally {
        button.disabled = false;
        refreshNow();
      }
    });
    return button;
  }

  // --- what a schedule is ----------------------------------------------------------------

  function scheduleStatus(schedule) {
    if (schedule.status) return schedule.status;
    if (schedule.deleted_at) return "deleted";
    if (schedule.quarantine) return "quarantined";
    if (schedule.state && schedule.state.paused) return "paused";
    return "active";
  }

  function specText(spec) {
    if (!spec) return "";
    const zone = spec.time_zone ? " (" + spec.time_zone + ")" : "";
    let text = spec.cron ? "cron " + spec.cron + zone
      : spec.every ? "every " + spec.every
      : spec.at ? "at " + spec.at + zone
      : "";
    if (spec.start_at) text += ", from " + instant(spec.start_at);
    if (spec.end_at) text += ", until " + instant(spec.end_at);
    return text;
  }

  function targetText(target) {
    if (!target) return "";
    const where = target.url || target.queue_url || target.function_arn || target.event_bus_name || target.job || "";
    return target.type + (where ? " " + where : "");
  }

  function watchCell(watch) {
    if (!watch) return muted("not judged yet");
    const parts = [badge(watch.status)];
    if (watch.expected_at) parts.push(" ", el("span", { class: "muted nowrap" }, "expects " + instant(watch.expected_at)));
    return el("span", { title: "checked " + watch.checked_at }, parts);
  }

  function isPlanned(run) {
    return run.status === "scheduled" && Date.parse(run.scheduled_at) > Date.now();
  }

  function nowIso() {
    return new Date().toISOString().replace(/\.\d+Z$/, "Z");
  }

  // Occurrences already created that are still to come, soonest first.
  async function plannedRuns(id, limit) {
    const path = query("/schedules/" + enc(id) + "/runs", { include: "planned", order: "oldest", since: nowIso(), limit });
    const page = await api("GET", path);
    return page.runs.filter(isPlanned).sort((a, b) => Date.parse(a.scheduled_at) - Date.parse(b.scheduled_at));
  }

  // The newest run that ran or was due to (skipped and cancelled records are not runs).
  const RAN = ["admitted", "running", "retrying", "succeeded", "failed", "expired"];
  async function lastRunOf(schedule) {
    const recent = (schedule.recent_runs || []).find((run) => RAN.includes(run.status));
    if (recent) return recent;
    const path = query("/schedules/" + enc(schedule.id) + "/runs", { status: RAN.join(","), limit: 1 });
    return (await api("GET", path)).runs[0] || null;
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

  function allSchedules() {
    return allPages("/schedules", "schedules");
  }

  // --- pages ----------------------------------------------------------------------------

  // Each page builds its frame once and gives back the function that loads its data;
  // the data is loaded again every few seconds while "auto-refresh" is on.
  let current = null;
  let generation = 0;

  function refreshBox() {
    const box = el("input", { type: "checkbox", id: "auto-refresh" });
    box.checked = autoRefresh;
    box.addEventListener("change", () => { autoRefresh = box.checked; });
    return el("label", { class: "refresh muted" }, box, " auto-refresh");
  }
  let autoRefresh = true;

  let pendingSecret = null;

  function schedulesPage() {
    const body = el("div", {}, el("p", { class: "muted" }, "Loading…"));
    // What each row's cells showed at the last refresh, kept until the new answers come.
    const shownBefore = new Map();
    const cell = (id, key, props, fallback) => {
      const before = shownBefore.get(id + " " + key);
      return before ? before.cloneNode(true) : el("td", props, fallback);
    };
    const remember = (id, cells) => {
      for (const [key, node] of Object.entries(cells)) shownBefore.set(id + " " + key, node.cloneNode(true));
    };
    add(main, [
      el("div", { class: "actions" }, el("h1", {}, "Schedules"), refreshBox()),
      createForm(),
      body,
    ]);
    return async (stale) => {
      let schedules;
      try {
        schedules = await allSchedules();
      } catch (error) {
        if (!stale()) replace(body, failure(error));
        return;
      }
      if (stale()) return;
      const rows = schedules.map((schedule) => {
        const id = schedule.id;
        const last = cell(id, "last", { class: "wrap" }, muted("…"));
        const next = cell(id, "next", {}, schedule.state && schedule.state.paused ? muted("paused") : when(schedule.next_due));
        const watch = cell(id, "watch", { class: "wrap" }, muted("…"));
        const status = el("td", {}, badge(scheduleStatus(schedule)));
        const row = el(
          "tr",
          { "data-schedule": schedule.id },
          el("td", { class: "name" }, scheduleLink(schedule.id, schedule.name), el("div", { class: "muted mono" }, schedule.id)),
          status,
          el("td", { class: "wrap" }, specText(schedule.spec)),
          next,
          last,
          watch,
        );
        return { schedule, row, last, watch, status, next };
      });
      replace(
        body,
        table(
          ["Name", "Status", "When", "Next run", "Last run", "Watch"],
          rows.map((r) => r.row),
          "No schedules yet: create one above, or with `duetime schedules create`.",
        ),
      );
      await eachLimited(rows, 4, async ({ schedule, last, watch, status, next }) => {
        try {
          const detail = await api("GET", "/schedules/" + enc(schedule.id));
          if (stale()) return;
          replace(status, badge(scheduleStatus(detail)));
          if (detail.state && detail.state.paused) replace(next, muted("paused"));
          else if (scheduleStatus(detail) === "ended") replace(next, muted("none: ended"));
          replace(watch, watchCell(detail.watch));
          const run = await lastRunOf(detail);
          if (stale()) return;
          replace(last, run ? [badge(run.status), " ", when(run.finished_at || run.started_at || run.scheduled_at)] : muted("none yet"));
          const planned = detail.state && detail.state.paused ? [] : await plannedRuns(schedule.id, 1);
          if (stale()) return;
          if (planned.length) replace(next, when(planned[0].scheduled_at));
          remember(schedule.id, { last, next, watch });
        } catch (error) {
          if (!stale()) replace(last, failure(error));
        }
      });
    };
  }

  function createForm() {
    const name = el("input", { id: "c-name", name: "name", required: true, maxlength: 200, placeholder: "nightly export" });
    const kind = el("select", { name: "kind" },
      el("option", { value: "every" }, "every (ISO 8601 duration)"),
      el("option", { value: "cron" }, "cron (five fields)"),
      el("option", { value: "at" }, "at (one instant or wall time)"));
    const placeholders = { every: "PT1M", cron: "0 9 * * MON-FRI", at: "2026-12-24T09:00" };
    const value = el("input", { id: "c-when", name: "when", required: true, placeholder: placeholders.every });
    kind.addEventListener("change", () => { value.placeholder = placeholders[kind.value]; });
    const zone = el("input", { id: "c-zone", name: "time_zone", value: "UTC", list: "zones" });
    const zones = el("datalist", { id: "zones" });
    if (Intl.supportedValuesOf) {
      for (const z of Intl.supportedValuesOf("timeZone")) zones.append(el("option", { value: z }));
    }
    const url = el("input", { id: "c-url", name: "url", type: "url", required: true, placeholder: "https://hooks.example.com/duetime" });
    const payload = el("textarea", { id: "c-payload", name: "payload", rows: 2, placeholder: '{"report": "sales"} (optional)' });
    const problem = el("p", { class: "error wide" });
    const form = el(
      "form",
      { class: "create", id: "create-form" },
      el("label", { for: "c-name" }, "Name"), name,
      el("label", { for: "c-when" }, "When"), el("span", {}, kind, " ", value),
      el("label", { for: "c-zone" }, "Time zone"), el("span", {}, zone, zones),
      el("label", { for: "c-url" }, "Webhook URL"), url,
      el("label", { for: "c-payload" }, "Payload"), payload,
      el("span", {}), el("span", {}, el("button", { type: "submit", class: "primary" }, "Create schedule")),
      problem,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      replace(problem);
      const body = {
        name: name.value,
        spec: { [kind.value]: value.value.trim(), time_zone: zone.value.trim() || "UTC" },
        target: { type: "webhook", url: url.value.trim() },
      };
      if (payload.value.trim()) {
        try {
          body.payload = JSON.parse(payload.value);
        } catch (error) {
          replace(problem, "The payload is not JSON: " + error.message);
          return;
        }
      }
      const key = crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random().toString(16).slice(2);
      try {
        const created = await api("POST", "/schedules", body, { "Idempotency-Key": key });
        if (created.webhook_secret) pendingSecret = { id: created.id, secret: created.webhook_secret };
        location.hash = "#/schedules/" + enc(created.id);
      } catch (error) {
        replace(problem, error instanceof ApiError ? error.describe() : String(error));
      }
    });
    return el("details", { class: "card", id: "create" }, el("summary", {}, "New schedule (webhook)"), form);
  }

  function schedulePage(id) {
    const title = el("h1", {}, id);
    const status = el("span", {});
    const subtitle = el("div", { class: "muted" });
    const secret = el("div", {});
    if (pendingSecret && pendingSecret.id === id) {
      add(secret, el("div", { class: "secret" },
        el("strong", {}, "Webhook signing secret: "), el("code", { id: "webhook-secret" }, pendingSecret.secret),
        el("div", { class: "muted" }, "Store it with your receiver now: the API does not show it again.")));
      pendingSecret = null;
    }
    const note = el("input", { id: "pause-note", placeholder: "pause note (optional)", maxlength: 1000 });
    // The note stays where it is while the buttons beside it are refreshed (keeps focus).
    const buttons = el("span", { class: "buttons" });
    const overview = el("div", { class: "card" }, el("h2", {}, "Overview"));
    const upcoming = el("div", { class: "card" }, el("h2", {}, "Upcoming occurrences"));
    const runs = el("section", {}, el("h2", {}, "Recent runs"));
    const versions = el("section", {}, el("h2", {}, "Versions"));
    add(main, [
      el("p", {}, link("#/", "← Schedules")),
      el("div", { class: "actions" }, title, status, refreshBox()),
      subtitle,
      secret,
      el("div", { class: "actions" }, note, buttons),
      el("div", { class: "cards" }, overview, upcoming),
      runs,
      versions,
    ]);
    const path = "/schedules/" + enc(id);
    const openRuns = new Set();
    return async (stale) => {
      const [schedule, runPage, versionPage, planned] = await Promise.allSettled([
        api("GET", path),
        api("GET", query(path + "/runs", { limit: 25 })),
        allPages(path + "/versions", "versions"),
        plannedRuns(id, 10),
      ]);
      if (stale()) return;
      if (schedule.status === "rejected") {
        replace(overview, el("h2", {}, "Overview"), failure(schedule.reason));
        replace(buttons);
      } else {
        const s = schedule.value;
        const state = scheduleStatus(s);
        replace(title, s.name);
        document.title = shown(s.name) + " · duetime";
        replace(status, badge(state));
        replace(subtitle, s.id + " · version " + s.version + (s.state && s.state.note ? " · paused: " + s.state.note : ""));
        const live = state !== "deleted";
        replace(buttons,
          action("Pause", () => {
            const text = note.value.trim();
            return api("POST", path + "/pause", text ? { note: text } : undefined).then(() => "Paused.");
          }, { id: "pause", disabled: !live || s.state.paused }),
          action("Resume", () => api("POST", path + "/resume").then(() => "Resumed: planned from now."),
            { id: "resume", disabled: !live || !s.state.paused }),
          action("Trigger now", () => api("POST", path + "/trigger").then((run) =>
            "Triggered: occurrence " + run.occurrence_id + " (the next tick admits it)."),
            { id: "trigger", disabled: !live || s.state.paused }),
          s.watch && ["late", "overdue"].includes(s.watch.status)
            ? action("Acknowledge", () => api("POST", path + "/acknowledge").then(() => "Acknowledged."), { id: "acknowledge" })
            : null,
        );
        renderOverview(overview, s);
        renderUpcoming(upcoming, s, planned.status === "fulfilled" ? planned.value : []);
      }
      if (runPage.status === "rejected") replace(runs, el("h2", {}, "Recent runs"), failure(runPage.reason));
      else replace(runs, el("h2", {}, "Recent runs"), runsTable(runPage.value.runs.filter((r) => !isPlanned(r)), openRuns, false));
      if (versionPage.status === "rejected") replace(versions, el("h2", {}, "Versions"), unavailable("versions", versionPage.reason));
      else replace(versions, el("h2", {}, "Versions"), versionsTable(versionPage.value));
    };
  }

  function renderOverview(box, s) {
    const policy = s.policy || {};
    const retry = policy.retry || {};
    const watch = s.watch;
    replace(box, el("h2", {}, "Overview"), dl([
      ["When", specText(s.spec)],
      ["Target", targetText(s.target)],
      ["Next due", when(s.next_due)],
      ["Watch", watch ? [watchCell(watch), " ", muted("checked " + instant(watch.checked_at))] : muted("not judged yet")],
      ["Last success", watch && watch.last_success_at ? when(watch.last_success_at) : null],
      ["Grace", watch && watch.grace_s !== null && watch.grace_s !== undefined ? seconds(watch.grace_s) : policy.grace],
      ["Overdue", policy.overdue + (policy.catchup_window ? " within " + policy.catchup_window : "")],
      ["DST", "gap: " + policy.dst_gap + ", fold: " + policy.dst_fold],
      ["Overlap", policy.overlap],
      ["Retry", retry.max_attempts + " attempts, " + retry.base + " doubling to " + retry.cap],
      ["Run timeout", policy.run_timeout],
      ["Quarantine", s.quarantine ? el("span", { class: "error" }, s.quarantine.component + ": " + s.quarantine.reason) : null],
      ["Created", when(s.created_at)],
      ["Updated", when(s.updated_at)],
      ["Deleted", s.deleted_at ? when(s.deleted_at) : null],
      ["Payload", s.payload && Object.keys(s.payload).length ? pre(s.payload) : null],
    ]));
  }

  // What comes next: the occurrences already created (planned), then the next ones the
  // planner will create, with their DST notes.
  // A local time beside its UTC instant: the time and offset, and the date only
  // where it is not the UTC date ("2027-03-14T03:00:00-04:00" -> "03:00:00-04:00").
  function localBeside(local, utc) {
    const text = String(local || "");
    const date = text.slice(0, 10);
    return date === String(utc || "").slice(0, 10) ? text.slice(11) : text.replace("T", " ");
  }

  function upcomingState(word, version, current) {
    return [word === "planned" ? badge("planned") : muted(word),
      version !== undefined && version !== current ? muted(" v" + version) : null];
  }

  function renderUpcoming(box, s, planned) {
    const soon = planned.slice(0, 5);
    // The next ones the planner will create come after every planned one: shown only
    // when all the planned ones are.
    const next = planned.length > soon.length ? [] : (s.next_occurrences || []).slice(0, Math.max(3, 8 - soon.length));
    const rows = [
      ...soon.map((r) =>
        el("tr", { "data-planned": r.occurrence_id },
          el("td", { class: "wrap" }, when(r.scheduled_at)),
          el("td", { class: "mono" }, localBeside(r.local, r.scheduled_at)),
          el("td", {}, upcomingState("planned", r.version, s.version), r.kind === "scheduled" ? null : " " + r.kind),
          el("td", {}))),
      ...next.map((o) =>
        el("tr", {},
          el("td", { class: "wrap" }, when(o.scheduled_at)),
          el("td", { class: "mono" }, localBeside(o.local, o.scheduled_at)),
          el("td", {}, upcomingState("next", o.version, s.version)),
          el("td", { class: "wrap dst" }, o.dst_note ? el("span", { class: "note" }, o.dst_note) : ""))),
    ];
    const paused = s.state && s.state.paused;
    replace(box, el("h2", {}, "Upcoming occurrences"),
      table(["Due (UTC)", "Local", "", "DST"], rows, paused ? "None while paused." : "None planned."));
    if (planned.length > soon.length) add(box, el("p", { class: "muted" }, "… and more already planned."));
    const older = s.planned_under_older_versions || [];
    if (older.length) {
      add(box, el("h2", {}, "Planned under older versions"),
        table(["Due (UTC)", "Version", "Status"], older.map((r) =>
          el("tr", {}, el("td", {}, when(r.scheduled_at)), el("td", {}, String(r.version)), el("td", {}, badge(r.status)))), ""));
    }
  }

  function attemptsTable(run) {
    const log = run.attempts_log;
    if (!Array.isArray(log)) return muted("This API does not serve the attempts of a run yet.");
    return table(["#", "Started", "Finished", "Outcome", "HTTP", "Error", "Wait before next"],
      log.map((a) => el("tr", {},
        el("td", {}, String(a.number)),
        el("td", {}, when(a.started_at)),
        el("td", {}, a.finished_at ? instant(a.finished_at) : ""),
        el("td", {}, a.outcome ? badge(a.outcome) : ""),
        el("td", {}, a.status_code === null || a.status_code === undefined ? "" : String(a.status_code)),
        el("td", { class: "name" }, a.error || ""),
        el("td", {}, seconds(a.wait_s)))),
      "No attempt yet.");
  }

  function retryButton(run) {
    if (!["failed", "expired"].includes(run.status)) return null;
    return action("Retry", () => api("POST", "/runs/" + enc(run.occurrence_id) + "/retry").then((again) =>
      "Retrying " + run.occurrence_id + ": now " + again.status + "."), { class: "retry", "data-occurrence": run.occurrence_id });
  }

  // Each run is a row; its attempts, result and progress open in a full-width row below it.
  function runsTable(runs, openRuns, withSchedule) {
    const headings = ["Due (UTC)", "Kind", "Status", "Version", "Attempts", "Late", "Reason", ""];
    if (withSchedule) headings.unshift("Schedule");
    return table(headings, runs.map((run) => {
      const open = openRuns.has(run.occurrence_id);
      const below = el("tr", { class: "below", "data-attempts-of": run.occurrence_id },
        el("td", { colspan: headings.length },
          el("div", { class: "muted mono" }, run.occurrence_id),
          attemptsTable(run),
          run.result ? [el("div", {}, "Result"), pre(run.result)] : null,
          run.progress ? [el("div", {}, "Progress"), pre(run.progress)] : null));
      below.hidden = !open;
      const toggle = el("button", { type: "button", class: "attempts", "aria-expanded": String(open) },
        open ? "hide attempts" : "attempts");
      toggle.addEventListener("click", () => {
        below.hidden = !below.hidden;
        if (below.hidden) openRuns.delete(run.occurrence_id);
        else openRuns.add(run.occurrence_id);
        toggle.setAttribute("aria-expanded", String(!below.hidden));
        replace(toggle, below.hidden ? "attempts" : "hide attempts");
      });
      return [
        el("tr", { "data-run": run.occurrence_id, "data-status": run.status },
          withSchedule ? el("td", { class: "name" }, scheduleLink(run.schedule_id, run.schedule_name || run.schedule_id)) : null,
          el("td", {}, when(run.scheduled_at)),
          el("td", {}, run.kind),
          el("td", {}, badge(run.status)),
          el("td", {}, String(run.version)),
          el("td", {}, String(run.attempts)),
          el("td", {}, seconds(run.late_s)),
          el("td", { class: "name" }, run.reason || ""),
          el("td", {}, el("div", { class: "buttons" }, retryButton(run), toggle))),
        below,
      ];
    }), "No runs yet.");
  }

  function versionsTable(list) {
    return table(["Version", "Created", "Name", "Changed", ""], list.slice().reverse().map((v) =>
      el("tr", {},
        el("td", {}, String(v.version)),
        el("td", {}, when(v.created_at)),
        el("td", { class: "name" }, v.name),
        el("td", {}, v.version === 1 ? muted("created") : (v.changed || []).join(", ") || muted("nothing")),
        el("td", {}, el("details", {}, el("summary", {}, "definition"),
          pre({ spec: v.spec, policy: v.policy, target: v.target, payload: v.payload }))))),
    "No versions.");
  }

  const SINCE = { "1h": 3600, "24h": 86400, "7d": 604800, all: null };

  function failedPage() {
    const since = el("select", { id: "since" }, Object.keys(SINCE).map((k) => el("option", { value: k }, k === "all" ? "all time" : "last " + k)));
    since.value = "24h";
    const runs = el("div", {}, muted("Loading…"));
    const letters = el("div", {}, muted("Loading…"));
    const openRuns = new Set();
    add(main, [
      el("div", { class: "actions" }, el("h1", {}, "Failed runs"), el("label", { class: "muted" }, "scheduled in ", since), refreshBox()),
      runs,
      el("h1", { class: "spaced" }, "Dead letters"),
      el("p", { class: "muted" }, "Deliveries the queue gave up on. Retry runs the occurrence again under its own id and idempotency key."),
      letters,
    ]);
    since.addEventListener("change", refreshNow);
    return async (stale) => {
      const span = SINCE[since.value];
      const params = { status: RUN_STATUSES.join(","), limit: 100 };
      if (span) params.since = new Date(Date.now() - span * 1000).toISOString().replace(/\.\d+Z$/, "Z");
      const [failed, dead, names] = await Promise.allSettled([
        api("GET", query("/runs", params)),
        api("GET", query("/dead-letters", { limit: 100 })),
        allSchedules(),
      ]);
      if (stale()) return;
      const nameOf = new Map(names.status === "fulfilled" ? names.value.map((s) => [s.id, s.name]) : []);
      if (failed.status === "rejected") replace(runs, unavailable("the runs of all schedules", failed.reason));
      else {
        const list = failed.value.runs.map((r) => ({ ...r, schedule_name: nameOf.get(r.schedule_id) }));
        replace(runs, runsTable(list, openRuns, true));
      }
      if (dead.status === "rejected") replace(letters, unavailable("dead letters", dead.reason));
      else replace(letters, lettersTable(dead.value.dead_letters, nameOf));
    };
  }

  function lettersTable(list, nameOf) {
    return table(["Dead-lettered", "Schedule", "Occurrence", "Reason", "Receives", "Message", ""], list.map((d) =>
      el("tr", { "data-dead-letter": d.id },
        el("td", {}, when(d.dead_lettered_at)),
        el("td", { class: "name" }, d.schedule_id ? scheduleLink(d.schedule_id, nameOf.get(d.schedule_id) || d.schedule_id) : muted("unknown")),
        el("td", { class: "mono" }, d.occurrence_id || ""),
        el("td", { class: "name" }, d.reason),
        el("td", {}, String(d.receive_count)),
        el("td", {}, el("details", {}, el("summary", {}, "body"), textBlock(d.body))),
        el("td", {}, d.occurrence_id ? action("Retry", () => api("POST", "/runs/" + enc(d.occurrence_id) + "/retry").then((again) =>
          "Retrying " + d.occurrence_id + ": now " + again.status + "."), { class: "retry", "data-occurrence": d.occurrence_id }) : null))),
    "No dead letters.");
  }

  // --- routing --------------------------------------------------------------------------

  function route() {
    generation += 1;
    const mine = generation;
    const hash = location.hash || "#/";
    main.replaceChildren();
    noticeBox.hidden = true;
    for (const a of document.querySelectorAll("[data-nav]")) a.classList.remove("current");
    let page;
    const match = /^#\/schedules\/([^/]+)$/.exec(hash);
    if (match) {
      page = schedulePage(decodeURIComponent(match[1]));
    } else if (hash === "#/failed") {
      document.querySelector('[data-nav="failed"]').classList.add("current");
      document.title = "Failed runs · duetime";
      page = failedPage();
    } else {
      document.querySelector('[data-nav="schedules"]').classList.add("current");
      document.title = "Schedules · duetime";
      page = schedulesPage();
    }
    current = { load: page, stale: () => mine !== generation, busy: false, again: false };
    refreshNow();
  }

  async function refreshNow(timed) {
    const page = current;
    if (!page) return;
    if (page.busy) {
      if (timed === true) return; // the timer waits for the load under way
      page.again = true; // after an action: load once more when this load ends
      return;
    }
    page.busy = true;
    try {
      do {
        page.again = false;
        await page.load(page.stale);
      } while (page.again && !page.stale());
    } catch (error) {
      if (!page.stale()) notice(String(error), true);
    } finally {
      page.busy = false;
    }
  }

  async function health() {
    const box = document.getElementById("api-status");
    try {
      const answer = await api("GET", "/health");
      replace(box, "API " + answer.status + " · " + instant(answer.time));
    } catch (error) {
      replace(box, el("span", { class: "error" }, "API: " + (error instanceof ApiError ? error.describe() : String(error))));
    }
  }

  window.addEventListener("hashchange", route);
  setInterval(() => { if (autoRefresh && !document.hidden) refreshNow(true); }, REFRESH_MS);
  route();
  health();
})();
