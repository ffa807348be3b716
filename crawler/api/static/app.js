// The dashboard: log in, then refresh every few seconds from the API. Admin controls are shown
// to admins only; the API enforces the roles whatever the page shows.
"use strict";
const REFRESH_MS = 4000;
const $ = (selector) => document.querySelector(selector);
let me = null, sort = "delay", timer = null, detailDomain = null;
let chosenCrawl = "", crawlOptions = "", clockSkew = 0;

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  if (response.status === 401) { showLogin(); throw new Error("not logged in"); }
  const body = response.headers.get("Content-Type")?.includes("json") ? await response.json() : null;
  if (!response.ok) throw Object.assign(new Error(body?.error || response.statusText), { status: response.status });
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
const count = (v) => (v === null || v === undefined ? "–" : Number(v).toLocaleString());

// Times: relative to the server's clock (the browser's may be off), the exact one on hover.
const serverNow = () => Date.now() / 1000 - clockSkew;
const epoch = (iso) => Date.parse(iso.replace(/(\.\d{3})\d+/, "$1")) / 1000; // microseconds are beyond Date
function duration(s) {
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}
const ago = (s) => (s === null || s === undefined ? "–" : s < 0 ? `in ${duration(-s)}` : `${duration(s)} ago`);
const exact = (at) => new Date(at * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "long" });
function timeCell(iso) {
  const td = cell(iso ? ago(serverNow() - epoch(iso)) : null);
  if (iso) td.title = exact(epoch(iso));
  return td;
}

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
    const stats = await api(`/api/stats${chosenCrawl ? `?crawl=${encodeURIComponent(chosenCrawl)}` : ""}`);
    clockSkew = Date.now() / 1000 - stats.generated_at;
    const crawl = stats.crawl ? `&crawl=${encodeURIComponent(stats.crawl.id)}` : "";
    const [series, domains, jobs] = await Promise.all([
      api(`/api/stats/timeseries?minutes=15&step=20${crawl}`),
      api(`/api/domains?sort=${sort}&limit=100`), api("/api/jobs?limit=20"),
    ]);
    renderStats(stats);
    drawChart($("#chart"), $("#legend"), series);
    $("#chart-crawl").textContent = `(last 15 minutes${stats.crawl ? ` of ${stats.crawl.id}` : ""})`;
    renderDomains(domains);
    renderJobs(jobs.jobs);
    const updated = $("#updated");
    updated.textContent = `updated ${new Date(stats.generated_at * 1000).toLocaleTimeString()}`;
    updated.title = exact(stats.generated_at);
  } catch (error) {
    if (error.status === 404 && chosenCrawl) chooseCrawl(""); // the crawl chosen is gone
    console.warn(error);
  }
}

function chooseCrawl(id) {
  chosenCrawl = id;
  $("#crawl-choice").value = id;
}

function renderStats(stats) {
  const crawl = stats.crawl;
  $("#rate").textContent = crawl ? crawl.pages_per_second.toFixed(2) : "–";
  $("#success").textContent = crawl?.success_rate == null ? "–" : `${(crawl.success_rate * 100).toFixed(1)} %`;
  $("#fetched").textContent = crawl ? count(crawl.pages_fetched) : "–";
  $("#frontier").textContent = count(stats.frontier.size);
  $("#frontier-age").textContent = stats.frontier.inbox_oldest_age === null ? stats.frontier.source
    : `${stats.frontier.source} · oldest seed ${ago(stats.frontier.inbox_oldest_age)}`;
  $("#active").textContent = stats.active_workers;
  $("#blocked").textContent = stats.domains.blocked;
  $("#crawl-state").textContent = stats.crawl_paused ? "the crawl is paused" : "the crawl runs";
  $("#alerts").replaceChildren(...stats.alerts.map((alert) =>
    Object.assign(document.createElement("div"), { className: "alert", textContent: `${alert.name}: ${alert.message}` })));
  renderCrawls(stats.crawls, crawl);
  renderWorkers(stats.workers, stats.finished_workers);
}

function renderCrawls(crawls, crawl) {
  const options = crawls.map((c) => `${c.id}\t${c.running}`).join("\n");
  if (options !== crawlOptions) { // rebuilt only when it changes: an open list stays open
    crawlOptions = options;
    $("#crawl-choice").replaceChildren(new Option("the crawl running", ""),
      ...crawls.map((c) => new Option(`${c.id} (${c.running ? "running" : "ended"})`, c.id)));
    $("#crawl-choice").value = chosenCrawl;
  }
  const state = $("#run-state");
  if (!crawl) { state.textContent = "no crawl yet"; return; }
  const live = crawl.running ? `running, ${crawl.live_workers} of ${crawl.workers} processes live`
    : `ended ${ago(serverNow() - epoch(crawl.heartbeat_at))}`;
  const started = Object.assign(document.createElement("span"), { textContent: ago(serverNow() - epoch(crawl.started_at)), title: exact(epoch(crawl.started_at)) });
  state.replaceChildren(`${crawl.id}: ${live} · started `, started, ` · jobs ${crawl.jobs.join(", ")}`);
}

function renderWorkers(workers, finishedCount) {
  const row = (w) => {
    const tr = document.createElement("tr");
    const silent = w.state !== "finished" && !w.live;
    if (silent) tr.className = "silent";
    tr.append(cell(w.worker_id), cell(w.crawl_id), cell(w.job_id), cell(w.hostname), cell(w.pid),
      cell(silent ? `${w.state}, silent` : w.state), timeCell(w.started_at), timeCell(w.heartbeat_at));
    return tr;
  };
  const finished = workers.filter((w) => w.state === "finished");
  $("#workers tbody").replaceChildren(...workers.filter((w) => w.state !== "finished").map(row));
  $("#finished-workers tbody").replaceChildren(...finished.map(row));
  $("#finished").hidden = finishedCount === 0;
  $("#finished-count").textContent = `${finishedCount} finished`
    + (finished.length < finishedCount ? ` (the latest ${finished.length} listed)` : "");
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
    row.dataset.job = job.id;
    row.append(cell(job.id), cell(job.spider), timeCell(job.started_at), timeCell(job.finished_at),
      cell(job.cancel_requested_at && job.status === "running" ? "cancelling" : job.status),
      cell(count(job.pages_fetched), "num pages"), cell(count(job.pages_failed), "num"));
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
    row.append(timeCell(page.crawled_at), cell(page.http_status), cell(page.url), cell(page.error));
    return row;
  }));
}

$("#login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = Object.fromEntries(new FormData(event.target));
  const response = await fetch("/api/auth/login", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(form), credentials: "same-origin",
  });
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
$("#crawl-choice").addEventListener("change", (event) => { chooseCrawl(event.target.value); refresh(); });
for (const th of document.querySelectorAll("#domains th[data-sort]")) {
  th.addEventListener("click", () => { sort = th.dataset.sort; refresh(); });
}

api("/api/auth/me")
  .then((body) => { if (body.username) { me = body; showDashboard(); } else showLogin(); })
  .catch((error) => { console.warn(error); showLogin(); });
