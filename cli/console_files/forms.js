// The schedule form: every field a create or an edit (PUT) takes, the same for both.
"use strict";

(() => {
  const D = window.duetime;
  const { el, replace, muted } = D;

  const KINDS = {
    every: ["every (ISO 8601 duration)", "PT1M"],
    cron: ["cron (five fields)", "0 9 * * MON-FRI"],
    at: ["at (one instant or wall time)", "2026-12-24T09:00"],
  };
  const TARGETS = {
    webhook: [["url", "URL", "https://hooks.example.com/duetime"], ["headers", "Headers (JSON)", '{"Authorization": "Bearer ..."}'],
      ["timeout_s", "Timeout (s)", "10"]],
    sqs: [["queue_url", "Queue URL", "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"],
      ["message_group_id", "Message group (FIFO)", ""]],
    lambda: [["function_arn", "Function ARN", "arn:aws:lambda:us-east-1:123456789012:function:job"],
      ["invocation_type", "Invocation", ["Event", "RequestResponse"]]],
    eventbridge: [["event_bus_name", "Event bus", "default"], ["source", "Source", "duetime"],
      ["detail_type", "Detail type", "duetime occurrence"]],
  };
  const CHOICES = {
    overdue: [["latest_only", "latest_only: run the newest missed slot, skip the others"],
      ["catch_up_all", "catch_up_all: run every missed slot"],
      ["expire", "expire: run a slot only within the catch-up window"]],
    dst_gap: [["cron", "cron: as Debian cron (default)"], ["shift", "shift: with the offset before the jump"],
      ["next_valid", "next_valid: at the first time that exists"], ["skip", "skip: not that day"]],
    dst_fold: [["cron", "cron: as Debian cron (default)"], ["first", "first: the first copy"],
      ["second", "second: the second copy"], ["both", "both copies"]],
    overlap: [["allow_all", "allow_all: start even if the last one still runs"],
      ["skip", "skip: not while the last one still runs"]],
  };

  function select(id, name, options) {
    return el("select", { id, name }, options.map(([value, text]) => el("option", { value }, text)));
  }

  // A label and its input on one line of the form's grid; `hidden` hides both.
  function row(id, label, input, hint) {
    return el("div", { class: "row" }, el("label", { for: id }, label),
      el("span", {}, input, hint ? el("span", { class: "hint muted" }, hint) : null));
  }

  class FormProblem extends Error {}

  function json(text, what) {
    if (!text.trim()) return undefined;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new FormProblem("The " + what + " is not JSON: " + error.message);
    }
  }

  // p: the prefix of the fields' ids ("c" on the create form, "e" on the edit form).
  function scheduleForm(p, formId, submitLabel) {
    const f = {};
    const input = (name, props) => (f[name] = el("input", { id: p + "-" + name.replace(/_/g, "-"), name, ...(props || {}) }));
    input("name", { required: true, maxlength: 200, placeholder: "nightly export" });
    f.kind = select(p + "-kind", "kind", Object.entries(KINDS).map(([k, [text]]) => [k, text]));
    input("when", { required: true, placeholder: KINDS.every[1] });
    f.kind.addEventListener("change", () => { f.when.placeholder = KINDS[f.kind.value][1]; });
    input("zone", { name: "time_zone", value: "UTC", list: p + "-zones" });
    const zones = el("datalist", { id: p + "-zones" });
    if (Intl.supportedValuesOf) for (const z of Intl.supportedValuesOf("timeZone")) zones.append(el("option", { value: z }));
    input("start_at", { placeholder: "2026-12-01T00:00:00Z (optional)" });
    input("end_at", { placeholder: "2027-06-30T23:59:59Z (optional)" });
    f.type = select(p + "-type", "type", Object.keys(TARGETS).map((t) => [t, t]));
    const targetRows = {};
    for (const [type, fields] of Object.entries(TARGETS)) {
      targetRows[type] = fields.map(([name, label, hint]) => {
        const id = p + "-" + name.replace(/_/g, "-");
        f[name] = Array.isArray(hint) ? select(id, name, hint.map((v) => [v, v]))
          : name === "headers" ? el("textarea", { id, name, rows: 1, placeholder: hint })
          : el("input", { id, name, placeholder: hint, type: name === "url" ? "url" : "text" });
        return row(id, label, f[name]);
      });
    }
    f.payload = el("textarea", { id: p + "-payload", name: "payload", rows: 2, placeholder: '{"report": "sales"} (optional)' });
    for (const name of Object.keys(CHOICES)) f[name] = select(p + "-" + name.replace(/_/g, "-"), name, CHOICES[name]);
    input("catchup_window", { placeholder: "PT10M (with expire)" });
    input("max_attempts", { type: "number", min: 1, max: 100, placeholder: "5" });
    input("base", { placeholder: "PT1S", class: "short" });
    input("cap", { placeholder: "PT30S", class: "short" });
    input("run_timeout", { placeholder: "PT15M" });
    input("grace", { placeholder: "the interval (optional)" });
    const problem = el("p", { class: "error wide" });
    const preview = el("div", { class: "wide preview" });
    const submit = el("button", { type: "submit", class: "primary" }, submitLabel);
    const showTarget = () => {
      for (const [type, rows] of Object.entries(targetRows)) for (const r of rows) r.hidden = type !== f.type.value;
    };
    const showCatchup = () => { catchupRow.hidden = f.overdue.value !== "expire"; };
    f.type.addEventListener("change", showTarget);
    f.overdue.addEventListener("change", showCatchup);
    const catchupRow = row(p + "-catchup-window", "Catch-up window", f.catchup_window, "how late a slot may still run");
    const form = el("form", { class: "create", id: formId },
      el("h3", { class: "wide" }, "What and when"),
      row(p + "-name", "Name", f.name),
      row(p + "-when", "When", [f.kind, " ", f.when]),
      row(p + "-zone", "Time zone", [f.zone, zones]),
      row(p + "-start-at", "Starts", f.start_at, "instant with offset"),
      row(p + "-end-at", "Ends", f.end_at, "inclusive"),
      el("h3", { class: "wide" }, "Target"),
      row(p + "-type", "Type", f.type),
      Object.values(targetRows),
      row(p + "-payload", "Payload", f.payload),
      el("h3", { class: "wide" }, "Policy"),
      row(p + "-overdue", "Overdue", f.overdue),
      catchupRow,
      row(p + "-dst-gap", "DST gap", f.dst_gap, "a wall time clocks skip"),
      row(p + "-dst-fold", "DST fold", f.dst_fold, "a wall time clocks repeat"),
      row(p + "-overlap", "Overlap", f.overlap),
      row(p + "-max-attempts", "Retries", [f.max_attempts, " attempts, waiting ", f.base, " doubling to ", f.cap]),
      row(p + "-run-timeout", "Run timeout", f.run_timeout),
      row(p + "-grace", "Grace", f.grace, "how late a success may be before it is overdue"),
      preview,
      el("span", {}), el("span", {}, submit),
      problem,
    );
    showTarget();
    showCatchup();

    // The body of a create or an edit, from the fields; a FormProblem for what the
    // page can tell is wrong before sending (JSON that does not parse).
    function body() {
      const text = (name) => f[name].value.trim();
      const spec = { [f.kind.value]: text("when"), time_zone: text("zone") || "UTC" };
      if (text("start_at")) spec.start_at = text("start_at");
      if (text("end_at")) spec.end_at = text("end_at");
      const target = { type: f.type.value };
      for (const [name] of TARGETS[target.type]) {
        const value = name === "headers" ? json(f.headers.value, "headers") : text(name);
        if (value === undefined || value === "") continue;
        target[name] = name === "timeout_s" ? Number(value) : value;
      }
      const policy = { overdue: f.overdue.value, dst_gap: f.dst_gap.value, dst_fold: f.dst_fold.value, overlap: f.overlap.value };
      if (policy.overdue === "expire" && text("catchup_window")) policy.catchup_window = text("catchup_window");
      const retry = {};
      if (text("max_attempts")) retry.max_attempts = Number(text("max_attempts"));
      if (text("base")) retry.base = text("base");
      if (text("cap")) retry.cap = text("cap");
      if (Object.keys(retry).length) policy.retry = retry;
      if (text("run_timeout")) policy.run_timeout = text("run_timeout");
      if (text("grace")) policy.grace = text("grace");
      const result = { name: f.name.value, spec, target, policy };
      const payload = json(f.payload.value, "payload");
      if (payload !== undefined) result.payload = payload;
      return result;
    }

    // The fields from a schedule as the API answers it.
    function fill(s) {
      const spec = s.spec || {};
      const policy = s.policy || {};
      const retry = policy.retry || {};
      const target = s.target || {};
      const set = (name, value) => { f[name].value = value === null || value === undefined ? "" : String(value); };
      set("name", s.name);
      f.kind.value = spec.cron ? "cron" : spec.at ? "at" : "every";
      set("when", spec.cron || spec.at || spec.every);
      set("zone", spec.time_zone || "UTC");
      set("start_at", spec.start_at);
      set("end_at", spec.end_at);
      f.type.value = target.type || "webhook";
      for (const fields of Object.values(TARGETS)) for (const [name] of fields) set(name, null);
      for (const [name] of TARGETS[f.type.value]) {
        const value = target[name];
        if (name === "headers") set(name, value && Object.keys(value).length ? JSON.stringify(value) : "");
        else if (value !== null && value !== undefined) set(name, value);
      }
      set("payload", s.payload && Object.keys(s.payload).length ? JSON.stringify(s.payload, null, 2) : "");
      for (const name of Object.keys(CHOICES)) if (policy[name]) f[name].value = policy[name];
      set("catchup_window", policy.catchup_window);
      set("max_attempts", retry.max_attempts);
      set("base", retry.base);
      set("cap", retry.cap);
      set("run_timeout", policy.run_timeout);
      set("grace", policy.grace);
      showTarget();
      showCatchup();
    }

    return { form, fields: f, body, fill, problem, preview, submit };
  }

  // The next runs a form's spec and policy would give, computed by the machine that
  // serves the page with the scheduler's own code (GET /console/preview).
  function previewer(schedule) {
    const f = schedule.fields;
    let timer = null;
    let asked = 0;
    async function show() {
      const params = { kind: f.kind.value, when: f.when.value.trim(), time_zone: f.zone.value.trim() || "UTC",
        start_at: f.start_at.value.trim(), end_at: f.end_at.value.trim(), dst_gap: f.dst_gap.value, dst_fold: f.dst_fold.value };
      if (!params.when) {
        replace(schedule.preview);
        return;
      }
      const mine = ++asked;
      try {
        const answer = await D.api("GET", D.query("/console/preview", params));
        if (mine !== asked) return;
        const rows = answer.occurrences.map((o) => el("tr", {},
          el("td", { class: "mono" }, D.zoned(o.utc, params.time_zone) || o.local), el("td", { class: "mono muted" }, D.instant(o.utc)),
          el("td", { class: "wrap dst" }, o.note ? el("span", { class: "note" }, o.note) : "")));
        replace(schedule.preview, el("div", { class: "muted" }, "Next runs, if saved now:"),
          D.table(["Local (" + params.time_zone + ")", "UTC", "DST"], rows, "None: no occurrence from now on."),
          answer.warnings.map((w) => el("div", { class: "note" }, w)));
      } catch (error) {
        if (mine !== asked) return;
        replace(schedule.preview, error.missing ? muted("No preview from this server: " + error.describe())
          : el("p", { class: "error" }, "Preview: " + D.described(error)));
      }
    }
    const later = () => { clearTimeout(timer); timer = setTimeout(show, 300); };
    for (const name of ["kind", "when", "zone", "start_at", "end_at", "dst_gap", "dst_fold"]) {
      f[name].addEventListener("input", later);
      f[name].addEventListener("change", later);
    }
    return show;
  }

  function createForm() {
    const s = scheduleForm("c", "create-form", "Create schedule");
    const show = previewer(s);
    s.form.addEventListener("submit", async (event) => {
      event.preventDefault();
      replace(s.problem);
      let body;
      try {
        body = s.body();
      } catch (error) {
        replace(s.problem, error.message);
        return;
      }
      const key = crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random().toString(16).slice(2);
      try {
        const created = await D.api("POST", "/schedules", body, { "Idempotency-Key": key });
        if (created.webhook_secret) D.pendingSecret = { id: created.id, secret: created.webhook_secret, created: true };
        location.hash = "#/schedules/" + D.enc(created.id);
      } catch (error) {
        replace(s.problem, D.described(error));
      }
    });
    const box = el("details", { class: "card", id: "create" }, el("summary", {}, "New schedule"), s.form);
    box.addEventListener("toggle", () => { if (box.open) show(); });
    return box;
  }

  Object.assign(D, { scheduleForm, previewer, createForm, FormProblem });
})();
