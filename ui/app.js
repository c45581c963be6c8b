// longbuild ui: the page. No framework and no build step: it talks to the viewer's JSON API
// (src/adapters/ui/viewer.ts) and draws the graph the server laid out as SVG.

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const STATES = ['queued', 'running', 'validating', 'revising', 'blocked', 'canceled', 'accepted'];
const ROW = 22;

const ui = { at: 0, cmp: null, node: null, event: null, head: 0, follow: false, meta: null, view: null, pages: new Map(), total: 0, filterKey: '' };

async function api(path) {
  const r = await fetch(path);
  if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error ?? `${r.status} ${r.statusText}`);
  return r.headers.get('content-type')?.startsWith('application/json') ? r.json() : r.text();
}

function readUrl() {
  const q = new URLSearchParams(location.search);
  const num = (k) => (q.get(k) !== null && /^\d+$/.test(q.get(k)) ? Number(q.get(k)) : null);
  return { at: num('at'), cmp: num('cmp'), node: q.get('node'), event: num('event') };
}

function writeUrl() {
  const q = new URLSearchParams();
  q.set('at', String(ui.at));
  if (ui.cmp !== null) q.set('cmp', String(ui.cmp));
  if (ui.node) q.set('node', ui.node);
  if (ui.event !== null) q.set('event', String(ui.event));
  history.replaceState(null, '', `?${q}`);
}

// ---- timeline ---------------------------------------------------------------------------

const MARK_COLOURS = { revision: '#9aa6c4', checkpoint: '#2e7d32', compaction: '#6a4fb3', renewal: '#2f5fd0', failure: '#d84315', completed: '#000' };

function drawMarks() {
  const svg = $('marks');
  const max = Math.max(1, ui.head);
  const w = 1000;
  svg.setAttribute('viewBox', `0 0 ${w} 14`);
  const rows = { revision: [10, 14], checkpoint: [0, 9], compaction: [0, 9], renewal: [0, 9], failure: [0, 9], completed: [0, 14] };
  svg.innerHTML = ui.meta.marks.map((m) => {
    const x = ((m.position / max) * w).toFixed(1);
    const [y1, y2] = rows[m.kind];
    return `<line x1="${x}" x2="${x}" y1="${y1}" y2="${y2}" stroke="${MARK_COLOURS[m.kind]}" stroke-width="${m.kind === 'revision' ? 1 : 2.5}" data-kind="${m.kind}"><title>${esc(`${m.position}: ${m.label}`)}</title></line>`;
  }).join('') + spendLine(w, max);
}

/** The cumulative spend over the log (R-58): USD when any call's cost is known, else tokens. */
function spendLine(w, max) {
  const pts = ui.meta.spend ?? [];
  if (pts.length === 0) return '';
  const last = pts.at(-1);
  const unit = last.usd > 0 ? 'usd' : 'tokens';
  const top = Math.max(last[unit], 1e-9);
  const xy = [[0, 14], ...pts.map((p) => [(p.position / max) * w, 14 - (p[unit] / top) * 13])].map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`);
  xy.push(`${w},${(14 - 13).toFixed(1)}`);
  const said = unit === 'usd' ? `$${last.usd.toFixed(2)}` : `${last.tokens.toLocaleString('en-US')} tokens`;
  return `<polyline points="${xy.join(' ')}" fill="none" stroke="#b8860b" stroke-width="1.5" data-testid="spend-line"><title>${esc(`spend: ${said} by position ${last.position}`)}</title></polyline>`;
}

/** What the calls used, readably: `$1.23 · 45,600 tokens`. */
function spendText(s) {
  if (!s || s.calls === 0) return '';
  if (s.reported === 0) return 'usage not reported';
  return `${s.usd !== null ? `$${s.usd.toFixed(2)}` : 'cost unknown'} · ${(s.inputTokens + s.outputTokens).toLocaleString('en-US')} tokens`;
}

function setWhere() {
  const ev = ui.view ? `graph revision ${ui.view.graphRevision}` : '';
  $('where').textContent = `position ${ui.at} of ${ui.head}${ev ? ` · ${ev}` : ''}${ui.cmp !== null ? ` · comparing with ${ui.cmp}` : ''}`;
}

let pending = 0;
async function setAt(p, opts = {}) {
  ui.at = Math.max(0, Math.min(ui.head, p));
  ui.follow = ui.at === ui.head;
  $('slider').value = String(ui.at);
  writeUrl();
  const mine = ++pending;
  const t0 = performance.now();
  const view = await api(`/api/view?at=${ui.at}`);
  if (mine !== pending) return;
  ui.view = view;
  drawGraph(view);
  drawHorizon(view);
  setWhere();
  if (ui.cmp !== null) await drawDiff();
  document.body.dataset.rendered = String(ui.at);
  document.body.dataset.renderMs = String(Math.round(performance.now() - t0));
  if (!opts.keepList) markListPosition();
}

// ---- graph ------------------------------------------------------------------------------

function duration(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

function drawGraph(v) {
  const L = v.layout;
  const ready = new Map(v.ready.map((id, i) => [id, i + 1]));
  const critical = new Set(v.criticalPath?.nodes ?? []);
  const edges = L.edges.map((e) => `<path class="edge" d="M${e.points.map((p) => `${p.x},${p.y}`).join(' L')}"/>`).join('');
  const nodes = v.nodes.map((n) => {
    const b = L.nodes[n.id];
    const fill = n.summary ? 'var(--summary)' : `var(--${n.state})`;
    const rank = ready.get(n.id);
    const extra = [n.attempts > 1 ? `×${n.attempts}` : '', n.summary ? `+${n.summary.holds.length}` : ''].filter(Boolean).join(' ');
    return `<g class="node${n.id === ui.node ? ' sel' : ''}${critical.has(n.id) ? ' critical' : ''}" data-id="${esc(n.id)}" data-state="${n.state}" transform="translate(${b.x},${b.y})">
      <rect width="${b.w}" height="${b.h}" fill="${fill}"/>
      <text x="8" y="${b.h / 2}">${esc(n.id)}</text>
      ${extra ? `<text x="${b.w - 6}" y="${b.h / 2}" text-anchor="end" class="muted">${esc(extra)}</text>` : ''}
      ${rank ? `<text x="${b.w - 4}" y="7" text-anchor="end" class="rank">#${rank}</text>` : ''}
      <title>${esc(`${n.id}: ${n.state}, ${n.kind}, milestone ${n.milestone}${n.attempts ? `, ${n.attempts} attempt(s)` : ''}${rank ? `, ready #${rank}` : ''}`)}</title></g>`;
  }).join('');
  $('graph').innerHTML = v.nodes.length === 0 ? '<p class="muted" style="padding:10px">No plan yet at this point.</p>'
    : `<svg width="${L.width}" height="${L.height}" data-testid="graph-svg"><defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#9a9a92"/></marker></defs>${edges}${nodes}</svg>`;
  const counts = {};
  for (const n of v.nodes) counts[n.state] = (counts[n.state] ?? 0) + 1;
  $('graph-meta').textContent = `revision ${v.graphRevision} · ${v.nodes.length} nodes · ${Object.entries(counts).map(([s, k]) => `${k} ${s}`).join(', ')}${v.spend && v.spend.calls > 0 ? ` · spend ${spendText(v.spend)}` : ''}${v.completed ? ' · completed' : v.blocked ? ` · blocked: ${v.blocked}` : ''}`;
  const cp = v.criticalPath;
  $('critical').innerHTML = cp && cp.nodes.length ? `<i class="critical"></i>critical path: ${cp.nodes.length} node${cp.nodes.length === 1 ? '' : 's'}${cp.remainingMs !== null ? `, about ${duration(cp.remainingMs)} left (from recorded call durations)` : ''} — outlined in purple, dashed` : '';
  for (const g of $('graph').querySelectorAll('.node')) g.addEventListener('click', () => selectNode(g.dataset.id));
}

function drawHorizon(v) {
  const h = v.horizon;
  $('horizon').innerHTML = h === null ? '<p class="muted">No horizon sealed yet.</p>'
    : [...h.detailed.map((m) => `<div class="ms" data-milestone="${esc(m.id)}"><span class="st ${m.status}">${m.status}</span><b>${esc(m.id)}</b> <span class="muted">${esc(m.title)}</span></div>`),
      ...h.coarse.map((m) => `<div class="ms" data-milestone="${esc(m.id)}"><span class="st coarse">coarse</span>${esc(m.id)} <span class="muted">${esc(m.title)}</span></div>`)].join('')
      + `<p class="muted">${esc(h.horizonId)}, revision ${h.revision}; ${v.checkpoints.length} checkpoint${v.checkpoints.length === 1 ? '' : 's'}${v.checkpoints.length ? ` (${esc(v.checkpoints.length > 4 ? `…, ${v.checkpoints.slice(-4).join(', ')}` : v.checkpoints.join(', '))})` : ''}</p>`;
  $('ready').innerHTML = `<b>ready</b> (ranked): ${v.ready.length ? v.ready.map((id, i) => `${i + 1}. ${esc(id)}`).join(' ') : '<span class="muted">none</span>'}`;
}

function selectNode(id) {
  ui.node = ui.node === id ? null : id;
  $('node-filter').value = ui.node ?? '';
  writeUrl();
  drawGraph(ui.view);
  showNode();
  resetList();
}

/** The selected node's panel: what it is, what it spent, and its last failure up to this point with its evidence. */
function showNode() {
  const n = ui.node ? ui.view.nodes.find((x) => x.id === ui.node) : undefined;
  if (!n) return;
  $('details').innerHTML = `<div class="kv" data-testid="node-details"><span>node</span><b>${esc(n.id)}</b><span>state</span><span>${n.state}</span><span>kind</span><span>${n.kind}</span>
      <span>milestone</span><span>${esc(n.milestone)}</span><span>attempts</span><span>${n.attempts}</span><span>depends on</span><span>${esc(n.deps.join(', ') || '-')}</span>
      ${n.title ? `<span>title</span><span>${esc(n.title)}</span>` : ''}
      ${n.changes ? `<span>may change</span><span data-testid="node-changes">${esc(n.changes.join(', '))}</span>` : ''}
      ${n.retires ? `<span>retires</span><span data-testid="node-retires">${esc(n.retires.join(', '))}</span>` : ''}
      ${n.spent ? `<span>spent</span><span data-testid="node-spent">${esc(spendText(n.spent))} in ${n.spent.calls} call${n.spent.calls === 1 ? '' : 's'}</span>` : ''}
      ${ui.view.spend?.milestones?.[n.milestone] ? `<span>milestone spent</span><span data-testid="milestone-spent">${esc(spendText(ui.view.spend.milestones[n.milestone]))}</span>` : ''}
      <span>last failure</span><span id="node-failure" data-testid="node-failure" class="muted">looking…</span></div>
      ${n.summary ? `<p><b>summary of ${esc(n.summary.milestoneId)}</b>, stands for ${n.summary.holds.length}:</p><ul data-testid="summary-holds">${n.summary.holds.map((x) => `<li>${esc(x)}</li>`).join('')}</ul>` : ''}
      <pre id="evidence-text" data-testid="evidence-text" hidden></pre>
      <p class="muted">The event list shows this node's events.</p>`;
  void lastFailure(n.id).then((f) => {
    const slot = $('node-failure');
    if (!slot || ui.node !== n.id) return;
    if (f === null) { slot.textContent = 'none'; return; }
    slot.classList.remove('muted');
    slot.innerHTML = `<span class="bad">${esc(f.reason)}</span> <a href="#" data-position="${f.position}" data-testid="failure-event">(${esc(f.type)} at ${f.position})</a>${f.evidence.length ? ` · evidence: ${evidenceLinks(f.evidence)}` : ''}`;
    slot.querySelector('a[data-position]').addEventListener('click', (ev) => { ev.preventDefault(); void selectEvent(f.position); });
    wireEvidence(slot);
  });
}

const FAILED = (r) => r.type === 'IntegrationFailed' || r.type === 'BatchSplit'
  || ((r.type === 'AttemptFinished' || r.type === 'VerificationFinished' || r.type === 'AcceptanceFinished') && /(^| )failed( |$)/.test(r.text));

/** The node's last failure at or before the point shown: its event's reason and evidence, or null. */
async function lastFailure(id) {
  const q = (offset) => api(`/api/events?node=${encodeURIComponent(id)}&offset=${offset}&limit=200`);
  const first = await q(0);
  const rows = first.total > 200 ? (await q(first.total - 200)).rows : first.rows;
  const row = rows.filter((r) => r.position <= ui.at && FAILED(r)).at(-1);
  if (!row) return null;
  const e = await api(`/api/event?position=${row.position}`);
  const d = JSON.parse(e.canonical).data;
  const reason = d.reason ?? (d.passed === false ? 'verification failed' : d.outcome ?? 'failed');
  // A failed integration's evidence is its job's verification output.
  let evidence = e.evidence;
  if (evidence.length === 0 && typeof d.jobId === 'string') {
    const runs = await api(`/api/events?type=VerificationFinished&q=${encodeURIComponent(d.jobId)}&offset=0&limit=200`);
    for (const r of runs.rows.filter((x) => x.position < row.position).reverse()) {
      const v = await api(`/api/event?position=${r.position}`);
      if (JSON.parse(v.canonical).data.jobId === d.jobId) { evidence = v.evidence; break; }
    }
  }
  return { position: row.position, type: row.type, reason, evidence };
}

const evidenceLinks = (list) => list.map((x) => `<a href="#" data-sha="${x.sha256}" data-testid="evidence-link">${esc(x.path)}</a>`).join(' · ');

/** Evidence links in `root` show the file's text in the panel's evidence box. */
function wireEvidence(root) {
  for (const a of root.querySelectorAll('a[data-sha]')) {
    a.addEventListener('click', async (ev) => {
      ev.preventDefault();
      const pre = $('evidence-text');
      pre.hidden = false;
      pre.textContent = (await api(`/api/evidence?sha256=${a.dataset.sha}`).catch((err) => `(${err.message})`)) || '(empty)';
    });
  }
}

// ---- diff ---------------------------------------------------------------------------------

async function drawDiff() {
  const d = await api(`/api/diff?from=${ui.cmp}&to=${ui.at}`);
  $('diff-pane').hidden = false;
  $('diff-range').textContent = `${ui.cmp} → ${ui.at}`;
  const list = (title, xs, f = esc) => (xs.length ? `<b>${title}</b><ul>${xs.map((x) => `<li>${f(x)}</li>`).join('')}</ul>` : '');
  const html = [
    list('added', d.added), list('removed', d.removed),
    list('compacted', d.compacted, (c) => `${esc(c.nodes.join(', '))} → ${esc(c.summary)} (${esc(c.milestone)})`),
    list('state', d.changed, (c) => `${esc(c.id)}: ${c.from} → ${c.to}`),
    list('dependencies', d.rewired, (r) => `${esc(r.id)}: ${[...r.added.map((x) => `+${esc(x)}`), ...r.removed.map((x) => `−${esc(x)}`)].join(' ')}`),
    list('attempts', d.attempts, (a) => `${esc(a.id)}: ${a.from} → ${a.to}`),
    d.ready ? `<b>ready</b><ul><li>${esc(d.ready.from.join(', ') || '-')}</li><li>→ ${esc(d.ready.to.join(', ') || '-')}</li></ul>` : '',
    d.horizon ? list('horizon', d.horizon.milestones, (m) => `${esc(m.id)}: ${m.from ?? '-'} → ${m.to ?? '-'}`) + (d.horizon.from !== d.horizon.to ? `<p>${esc(d.horizon.from ?? '-')} → ${esc(d.horizon.to ?? '-')}</p>` : '') : '',
    list('checkpointed', d.checkpointed),
  ].join('');
  $('diff').innerHTML = `<div class="diff">${html || '<p class="muted">Nothing changed.</p>'}</div>`;
}

// ---- events -------------------------------------------------------------------------------

function filterQuery() {
  const q = new URLSearchParams();
  if ($('type-filter').value) q.set('type', $('type-filter').value);
  if ($('node-filter').value.trim()) q.set('node', $('node-filter').value.trim());
  if ($('search').value.trim()) q.set('q', $('search').value.trim());
  return q;
}

async function page(index) {
  const key = `${ui.filterKey}|${index}`;
  if (!ui.pages.has(key)) {
    const q = filterQuery();
    q.set('offset', String(index * 200));
    q.set('limit', '200');
    ui.pages.set(key, api(`/api/events?${q}`));
  }
  return ui.pages.get(key);
}

async function resetList() {
  ui.filterKey = filterQuery().toString();
  ui.pages.clear();
  const first = await page(0);
  ui.total = first.total;
  $('event-count').textContent = `${first.total} event${first.total === 1 ? '' : 's'}`;
  $('event-spacer').style.height = `${first.total * ROW}px`;
  await drawRows();
}

async function drawRows() {
  const list = $('event-list');
  const from = Math.max(0, Math.floor(list.scrollTop / ROW) - 10);
  const to = Math.min(ui.total, from + Math.ceil(list.clientHeight / ROW) + 20);
  const rows = [];
  for (let p = Math.floor(from / 200); p <= Math.floor(Math.max(from, to - 1) / 200); p++) {
    const got = await page(p);
    got.rows.forEach((r, i) => rows.push([p * 200 + i, r]));
  }
  const html = rows.filter(([i]) => i >= from && i < to).map(([i, r]) =>
    `<div class="row${r.position === ui.event ? ' sel' : ''}${r.position > ui.at ? ' after' : ''}" style="top:${i * ROW}px" data-position="${r.position}"><span>${r.position}</span><span class="t">${esc(r.type)}</span><span class="muted">${esc(r.text)}</span></div>`).join('');
  list.querySelectorAll('.row').forEach((e) => e.remove());
  list.insertAdjacentHTML('beforeend', html);
  for (const e of list.querySelectorAll('.row')) e.addEventListener('click', () => selectEvent(Number(e.dataset.position)));
}

function markListPosition() {
  for (const e of $('event-list').querySelectorAll('.row')) e.classList.toggle('after', Number(e.dataset.position) > ui.at);
}

async function sha256Hex(text) {
  if (!crypto.subtle) return null;
  const buf = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** What a verification's tests said, or what a promotion retired (R-50..R-52), as a few lines; '' for other events. */
function testsOf(d) {
  const named = (ids, count) => (count ? `${count} (${ids.slice(0, 5).map((x) => esc(JSON.stringify(x))).join(', ')}${count > 5 ? ', …' : ''})` : 'none');
  if (d.tests && typeof d.tests.lostCount === 'number') {
    const t = d.tests;
    const h = t.holdout;
    return `<div class="kv" data-testid="event-tests"><span>tests</span><span>${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped</span>
      <span>base head</span><span>${t.base ? `${t.base.passed} passed${t.base.measured ? ' (measured)' : ''}` : 'no tests known'}</span>
      <span>no longer passing</span><span>${named(t.lost, t.lostCount)}</span>
      ${h ? `<span>hold-out</span><span>${h.unreadable ? `cannot name its failures: ${esc(h.unreadable)}` : `failing base tests ${named(h.failing, h.failingCount)}`}</span>` : ''}</div>`;
  }
  const r = d.receipt && d.receipt.tests;
  return r ? `<div class="kv" data-testid="event-tests"><span>tests</span><span>${r.passed} passed on the promoted tree</span><span>retired</span><span>${named(r.retired || [], (r.retired || []).length)}</span></div>` : '';
}

async function selectEvent(position) {
  ui.event = position;
  const e = await api(`/api/event?position=${position}`);
  const recomputed = await sha256Hex(e.canonical);
  const check = recomputed === null ? '' : recomputed === e.hash ? ' <span class="ok" data-testid="hash-ok">✓ recomputed</span>' : ' <span class="bad">✗ does not match its bytes</span>';
  $('details').innerHTML = `<div class="kv" data-testid="event-details"><span>event</span><b>${e.position} ${esc(e.type)}</b>
      <span>hash</span><code>${e.hash}${check}</code><span>previous</span><code>${e.prevHash}</code>
      <span>recorded</span><span>${esc(e.metadata.recordedAt)}</span>
      ${e.git.map((g) => `<span>${esc(g.path)}</span><code>${g.sha}</code>`).join('')}</div>
    ${testsOf(e.data)}
    ${e.evidence.length ? `<p><b>evidence</b> ${evidenceLinks(e.evidence)}</p><pre id="evidence-text" data-testid="evidence-text" hidden></pre>` : ''}
    <pre data-testid="event-json">${esc(JSON.stringify(JSON.parse(e.canonical), null, 2))}</pre>`;
  wireEvidence($('details'));
  await setAt(position, { keepList: true });
  await drawRows();
}

// ---- live mode ----------------------------------------------------------------------------

async function refreshMeta() {
  ui.meta = await api('/api/meta');
  ui.head = ui.meta.head;
  $('slider').max = String(ui.head);
  $('title').textContent = ui.meta.title;
  const v = ui.meta.verify;
  const badge = $('badge');
  badge.className = `badge${v.state === 'done' ? (v.ok ? ' ok' : ' bad') : ''}`;
  badge.textContent = v.state !== 'done' ? 'checking the chain…' : v.ok ? `chain verified up to ${v.events}${v.checkpoints ? `, ${v.checkpoints} signed checkpoint${v.checkpoints === 1 ? '' : 's'}` : ''}` : `chain NOT verified: ${v.problem ?? 'see longbuild verify'}`;
  const select = $('type-filter');
  const chosen = select.value;
  select.innerHTML = `<option value="">all types</option>${ui.meta.types.map((t) => `<option${t === chosen ? ' selected' : ''}>${esc(t)}</option>`).join('')}`;
  drawMarks();
}

function live() {
  const es = new EventSource('/api/stream');
  es.onopen = () => { $('live').classList.add('on'); $('live').textContent = 'live'; };
  es.onerror = () => { $('live').classList.remove('on'); $('live').textContent = 'not live'; };
  es.onmessage = async (m) => {
    const { position, verified } = JSON.parse(m.data);
    if (verified) return refreshMeta(); // the chain check finished: the badge
    if (position === ui.head) return;
    const following = ui.follow;
    await refreshMeta();
    await resetList();
    if (following) await setAt(ui.head);
    else setWhere();
  };
}

// ---- wiring -------------------------------------------------------------------------------

/**
 * Where a page without ?at= opens: the head; for a finished build whose last milestone was then
 * compacted, its last checkpoint, where that milestone's nodes are still in the graph (the head
 * holds only summaries, which a click expands).
 */
function openingPoint() {
  const marks = ui.meta.marks;
  const last = (kind) => marks.filter((m) => m.kind === kind).at(-1)?.position ?? -1;
  const checkpoint = last('checkpoint');
  return ui.meta.completed && checkpoint > 0 && last('compaction') > checkpoint ? checkpoint : ui.head;
}

async function main() {
  $('legend').innerHTML = [...STATES, 'summary'].map((s) => `<span><i style="background:var(--${s})"></i>${s}</span>`).join('');
  $('mark-legend').innerHTML = Object.entries(MARK_COLOURS).map(([k, c]) => `<span><i style="background:${c}"></i>${k}</span>`).join('') + '<span><i style="background:#b8860b"></i>spend</span>';
  await refreshMeta();
  const u = readUrl();
  ui.cmp = u.cmp;
  ui.node = u.node;
  ui.event = u.event;
  if (ui.node) $('node-filter').value = ui.node;
  $('clear-compare').hidden = ui.cmp === null;
  await setAt(u.at ?? openingPoint());
  if (ui.node) showNode();
  await resetList();
  if (ui.event !== null) await selectEvent(ui.event);
  let t = null;
  $('slider').addEventListener('input', () => { clearTimeout(t); t = setTimeout(() => setAt(Number($('slider').value)), 40); });
  $('prev').addEventListener('click', () => setAt(ui.at - 1));
  $('next').addEventListener('click', () => setAt(ui.at + 1));
  document.addEventListener('keydown', (e) => {
    if (e.target instanceof HTMLInputElement && e.target.type !== 'range') return;
    if (e.key === 'ArrowLeft') { e.preventDefault(); setAt(ui.at - 1); }
    if (e.key === 'ArrowRight') { e.preventDefault(); setAt(ui.at + 1); }
  });
  $('compare').addEventListener('click', async () => { ui.cmp = ui.at; $('clear-compare').hidden = false; writeUrl(); await drawDiff(); setWhere(); });
  $('clear-compare').addEventListener('click', () => { ui.cmp = null; $('clear-compare').hidden = true; $('diff-pane').hidden = true; writeUrl(); setWhere(); });
  $('event-list').addEventListener('scroll', () => drawRows());
  let f = null;
  for (const id of ['type-filter', 'node-filter', 'search']) $(id).addEventListener('input', () => { clearTimeout(f); f = setTimeout(() => { if (id === 'node-filter') { ui.node = $('node-filter').value.trim() || null; writeUrl(); } resetList(); }, 150); });
  live();
  document.body.dataset.ready = 'true';
}

main().catch((err) => {
  document.body.insertAdjacentHTML('afterbegin', `<p class="bad" style="padding:10px" data-testid="error">${esc(err.message)}</p>`);
});
