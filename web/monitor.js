// strata's monitor page: /metrics and /health every two seconds.
'use strict';

const $ = (id) => document.getElementById(id);
const history = [];

// Prometheus text: name{labels} value, as [{name, labels, value}].
function parse(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    for (const kv of (m[2] || '').slice(1, -1).split(',')) {
      const [k, v] = kv.split('=');
      if (k) labels[k.trim()] = (v || '').replace(/^"|"$/g, '');
    }
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

const sum = (ms, name) => ms.filter((m) => m.name === name).reduce((a, m) => a + m.value, 0);
const has = (ms, prefix) => ms.some((m) => m.name.startsWith(prefix));
const fmt = (v, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : '-');

// A quantile from a cumulative histogram's buckets.
function quantile(ms, name, q) {
  const b = ms.filter((m) => m.name === name + '_bucket')
    .map((m) => ({ le: m.labels.le === '+Inf' ? Infinity : Number(m.labels.le), n: m.value }))
    .sort((x, y) => x.le - y.le);
  const total = b.length ? b[b.length - 1].n : 0;
  if (!total) return NaN;
  return b.find((x) => x.n >= q * total)?.le ?? NaN;
}

function draw() {
  const c = $('chart');
  const g = c.getContext('2d');
  g.clearRect(0, 0, c.width, c.height);
  if (history.length < 2) return;
  const max = Math.max(...history, 1);
  g.strokeStyle = '#2a7';
  g.lineWidth = 2;
  g.beginPath();
  history.forEach((v, i) => {
    const x = (i / (history.length - 1)) * (c.width - 10) + 5;
    const y = c.height - 5 - (v / max) * (c.height - 20);
    if (i) g.lineTo(x, y); else g.moveTo(x, y);
  });
  g.stroke();
  g.fillStyle = '#888';
  g.fillText(`${fmt(max)} tok/s`, 5, 12);
}

function show(ms, health) {
  const decode = sum(ms, 'strata_decode_tokens_per_second');
  $('decode').textContent = fmt(decode);
  $('prompt').textContent = fmt(sum(ms, 'strata_prompt_tokens_per_second'));
  const n = sum(ms, 'strata_first_token_seconds_count');
  const mean = n ? (sum(ms, 'strata_first_token_seconds_sum') / n) * 1000 : NaN;
  $('ttft').textContent = Number.isFinite(mean) ? `${fmt(mean, 0)} ms` : '-';
  $('ttft-detail').textContent = `mean of ${n}; p50 <= ${fmt(quantile(ms, 'strata_first_token_seconds', 0.5) * 1000, 0)} ms, p95 <= ${fmt(quantile(ms, 'strata_first_token_seconds', 0.95) * 1000, 0)} ms`;
  $('queue').textContent = String(health.queued ?? sum(ms, 'strata_queue_waiting'));
  $('busy').textContent = health.busy ? 'waiting; generating now' : 'waiting; idle';
  $('ckpt').textContent = String(sum(ms, 'strata_checkpoint_hits_total'));
  $('reused').textContent = `hits; ${sum(ms, 'strata_prompt_tokens_reused_total')} prompt tokens not read again`;
  const byStatus = {};
  for (const m of ms.filter((x) => x.name === 'strata_requests_total')) {
    byStatus[m.labels.code || m.labels.status || '?'] = m.value;
  }
  $('requests').textContent = String(sum(ms, 'strata_requests_total'));
  $('statuses').textContent = Object.entries(byStatus).map(([k, v]) => `${k}: ${v}`).join(', ') || 'by status';
  $('tokens').textContent = String(sum(ms, 'strata_generated_tokens_total'));
  $('tokens-detail').textContent = `generated; ${sum(ms, 'strata_prompt_tokens_total')} prompt`;
  if (has(ms, 'strata_expert_')) {
    const hits = sum(ms, 'strata_expert_hits_total'), misses = sum(ms, 'strata_expert_misses_total');
    $('experts').textContent = hits + misses ? `${fmt((100 * hits) / (hits + misses))} %` : '-';
    $('experts-detail').textContent = `hits; ${misses} misses, ${sum(ms, 'strata_expert_reads_total')} reads, ${sum(ms, 'strata_expert_cache_slots')} slots`;
  } else {
    $('experts').textContent = 'mapped';
    $('experts-detail').textContent = 'experts are not streamed';
  }
  // Whatever strata_ple_* series /metrics has, by name: the served engine
  // reads no PLE table today, so this card says so until it does.
  const ple = ms.filter((m) => m.name.startsWith('strata_ple_'));
  if (ple.length) {
    $('ple').textContent = String(ple.length);
    $('ple-detail').textContent = ple.map((m) => `${m.name.slice(11)} ${m.value}`).join(', ');
  } else {
    $('ple').textContent = '-';
    $('ple-detail').textContent = 'no PLE counters in /metrics';
  }
  history.push(decode);
  if (history.length > 120) history.shift();
  draw();
}

function headers() {
  const key = JSON.parse(localStorage.getItem('strata.settings') || '{}').api_key;
  return key ? { Authorization: 'Bearer ' + key } : {};
}

async function tick() {
  try {
    const [m, h] = await Promise.all([
      fetch('/metrics', { headers: headers() }).then((r) => r.text()),
      fetch('/health', { headers: headers() }).then((r) => r.json()),
    ]);
    $('raw').textContent = m;
    show(parse(m), h);
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    $('updated').textContent = 'no answer: ' + e.message;
  }
}

fetch('/v1/models', { headers: headers() }).then((r) => r.json())
  .then((j) => { $('model').textContent = j.data?.[0]?.id ?? ''; }).catch(() => {});
tick();
setInterval(tick, 2000);
