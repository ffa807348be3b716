// The dashboard: log in, then refresh every few seconds from the API. Admin controls are shown
// to admins only; the API enforces the roles whatever the page shows.
"use strict";
const REFRESH_MS = 4000;
const $ = (selector) => document.querySelector(selector);
let me = null, sort = "delay", timer = null, detailDomain = null;

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  if (response.status === 401) { showLogin(); throw new Error("not logged in"); }
  const body = response.headers.get("Content-Type")?.includes("json") ? await response.json() : null;
  if (!response.ok) throw new Error(body?.error || response.statusText);
  return body;
}
const post = (path, body, method = "POST") => api(path, {
  method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body ?? {}),
});

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text ?? "–";
  if (className) td.className = className;
  return td;
}
const seconds = (v) => (v === null || v === undefined ? "–" : `${Number(v).toFixed(2)} s`);
const age = (s) => (s === null || s === undefined ? "–" : s < 90 ? `${s.toFixed(0)} s ago` : `${(s / 60).toFixed(1)} min ago`);

function showLogin() {
  clearInterval(timer);
  me = null;
  $("#login").hidden = false;
  $("#dashboard").hidden = true;
  $("#logout").hidden = true;
  $("#who").textContent = "";
}

function showDashboard() {
  $("#login").hidden = true;
  $("#dashboard").hidden = false;
  $("#logout").hidden = false;
  $("#who").textContent = `${me.username} (${me.role})`;
  for (const element of document.querySelectorAll(".admin-only")) element.hidden = me.role !== "admin";
  refresh();
  clearInterval(timer);
  timer = setInterval(refresh, REFRESH_MS);
}

async function refresh() {
  try {
    const [stats, series, domains, jobs] = await Promise.all([
      api("/api/stats"), api("/api/stats/timeseries?minutes=15&step=20"),
      api(`/api/domains?sort=${sort}&limit=100`), api("/api/jobs?limit=20"),
    ]);
    renderStats(stats);
    drawChart($("#chart"), $("#legend"), series.points);
    renderDomains(domains);
    renderJobs(jobs.jobs);
  } catch (error) {
    console.warn(error);
  }
}

function renderStats(stats) {
  $("#rate").textContent = stats.pages_per_second.toFixed(2);
  $("#success").textContent = stats.success_rate === null ? "–" : `${(stats.success_rate * 100).toFixed(1)} %`;
  $("#fetched").textContent = stats.totals.pages_fetched.toLocaleString();
  $("#frontier").textContent = stats.frontier.size.toLocaleString();
  $("#frontier-age").textContent = stats.frontier.inbox_oldest_age === null ? stats.frontier.source
    : `${stats.frontier.source} · oldest seed ${age(stats.frontier.inbox_oldest_age)}`;
  $("#active").textContent = stats.active_workers;
  $("#blocked").textContent = stats.domains.blocked;
  $("#crawl-state").textContent = stats.crawl_paused ? "the crawl is paused" : "the crawl runs";
  $("#alerts").replaceChildren(...stats.alerts.map((alert) =>
    Object.assign(document.createElement("div"), { className: "alert", textContent: `${alert.name}: ${alert.message}` })));
  $("#workers tbody").replaceChildren(...stats.workers.map((w) => {
    const row = document.createElement("tr");
    row.append(cell(w.worker_id), cell(w.job_id), cell(w.hostname), cell(w.pid), cell(w.live ? w.state : `${w.state} (silent)`), cell(age(w.heartbeat_age)));
    return row;
  }));
}

function renderDomains(data) {
  $("#domain-count").textContent = `(${data.total}; sorted by ${sort})`;
  for (const th of document.querySelectorAll("#domains th[data-sort]")) th.classList.toggle("sorted", th.dataset.sort === sort);
  $("#domains tbody").replaceChildren(...data.domains.map((d) => {
    const row = document.createElement("tr");
    row.dataset.domain = d.domain;
    if (d.blocked_for > 0) row.classList.add("blocked");
    if (d.paused) row.classList.add("paused");
    const name = document.createElement("td");
    const link = Object.assign(document.createElement("a"), { className: "domain", textContent: d.domain });
    link.addEventListener("click", () => showDetail(d.domain));
    name.append(link);
    row.append(name, cell(seconds(d.effective_delay), "num"), cell(seconds(d.robots_delay), "num"),
      cell(`${seconds(d.learned_delay)} (${seconds(d.learned_floor)})`, "num"),
      cell(d.blocked_for > 0 ? `${d.blocked_for.toFixed(1)} s` : "–", "num"), cell(d.circuit),
      cell(d.in_flight, "num"), cell(d.queued, "num"), cell(d.pages, "num"), cell(d.errors, "num"),
      cell(d.responses_429, "num"), cell(d.paused ? "paused" : "active"));
    if (me.role === "admin") row.append(domainControls(d));
    return row;
  }));
}

function domainControls(d) {
  const td = document.createElement("td");
  const action = (label, className, path) => {
    const button = Object.assign(document.createElement("button"), { textContent: label, className });
    button.addEventListener("click", async () => { await post(path); refresh(); });
    return button;
  };
  const domain = encodeURIComponent(d.domain);
  td.append(d.paused ? action("Resume", "resume", `/api/domains/${domain}/resume`) : action("Pause", "pause", `/api/domains/${domain}/pause`),
    " ", action("Reset", "reset", `/api/admin/domains/${domain}/reset`));
  return td;
}

function renderJobs(jobs) {
  $("#jobs tbody").replaceChildren(...jobs.map((job) => {
    const row = document.createElement("tr");
    row.append(cell(job.id), cell(job.spider), cell(job.started_at), cell(job.cancel_requested_at && job.status === "running" ? "cancelling" : job.status),
      cell(job.pages_fetched, "num"), cell(job.pages_failed, "num"));
    if (me.role === "admin") {
      const td = document.createElement("td");
      if (job.status === "running" && !job.cancel_requested_at) {
        const button = Object.assign(document.createElement("button"), { textContent: "Cancel", className: "cancel" });
        button.addEventListener("click", async () => { await post(`/api/jobs/${encodeURIComponent(job.id)}/cancel`); refresh(); });
        td.append(button);
      }
      row.append(td);
    }
    return row;
  }));
}

async function showDetail(domain) {
  detailDomain = domain;
  $("#detail").hidden = false;
  $("#detail-domain").textContent = domain;
  const name = encodeURIComponent(domain);
  const [robots, errors] = await Promise.allSettled([api(`/api/domains/${name}/robots`), api(`/api/pages?domain=${name}&status=error&limit=20`)]);
  if (detailDomain !== domain) return;
  $("#detail-robots").textContent = robots.status === "fulfilled" ? (robots.value.robots_txt ?? `(status ${robots.value.robots_status})`) : "no robots.txt stored";
  $("#detail-errors tbody").replaceChildren(...(errors.status === "fulfilled" ? errors.value.pages : []).map((page) => {
    const row = document.createElement("tr");
    row.append(cell(page.crawled_at), cell(page.http_status), cell(page.url), cell(page.error));
    return row;
  }));
}

$("#login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const response = await fetch("/api/auth/login", { method: "POST", body: new URLSearchParams(form), credentials: "same-origin" });
  const body = await response.json();
  if (!response.ok) { $("#login-error").textContent = body.error; return; }
  $("#login-error").textContent = "";
  me = body;
  showDashboard();
});
$("#logout").addEventListener("click", async () => { await post("/api/auth/logout"); showLogin(); });
$("#seed-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const urls = event.target.urls.value.split("\n").map((u) => u.trim()).filter(Boolean);
  try {
    const result = await post("/api/frontier/seed", { urls });
    $("#seed-result").textContent = `${result.accepted.length} queued, ${result.rejected.length} rejected`;
    event.target.urls.value = "";
  } catch (error) { $("#seed-result").textContent = error.message; }
});
$("#pause-all").addEventListener("click", async () => { await post("/api/domains/*/pause"); refresh(); });
$("#resume-all").addEventListener("click", async () => { await post("/api/domains/*/resume"); refresh(); });
$("#detail-close").addEventListener("click", () => { detailDomain = null; $("#detail").hidden = true; });
for (const th of document.querySelectorAll("#domains th[data-sort]")) {
  th.addEventListener("click", () => { sort = th.dataset.sort; refresh(); });
}

fetch("/api/auth/me", { credentials: "same-origin" })
  .then((r) => (r.ok ? r.json() : null))
  .then((body) => { if (body) { me = body; showDashboard(); } else showLogin(); });
