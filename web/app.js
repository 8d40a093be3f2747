// strata's chat page: conversations in this browser's localStorage, answers
// streamed from /v1/chat/completions, the thinking block folded away.
'use strict';

const $ = (id) => document.getElementById(id);
const store = {
  load(key, dflt) {
    try { return JSON.parse(localStorage.getItem(key)) ?? dflt; } catch { return dflt; }
  },
  save(key, value) { localStorage.setItem(key, JSON.stringify(value)); },
};

let convs = store.load('strata.conversations', []);
let current = store.load('strata.current', null);
let controller = null;
const settingIds = ['system', 'temperature', 'top_p', 'max_tokens', 'thinking', 'api_key'];

function conv() {
  let c = convs.find((x) => x.id === current);
  if (!c) {
    c = { id: String(Date.now()), title: 'New chat', messages: [] };
    convs.unshift(c);
    current = c.id;
  }
  return c;
}

function persist() {
  store.save('strata.conversations', convs);
  store.save('strata.current', current);
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// One message: its role, a folded thinking block when there is reasoning, its text.
function messageView(m) {
  const box = el('div', 'msg ' + m.role);
  box.append(el('div', 'role', m.role === 'user' ? 'You' : 'Assistant'));
  const think = el('details', 'thinking');
  think.append(el('summary', '', 'Thinking'), el('div', 'reasoning', m.reasoning || ''));
  think.hidden = !m.reasoning;
  box.append(think, el('div', 'content', m.content || ''));
  return box;
}

function render() {
  const list = $('conversations');
  list.replaceChildren();
  for (const c of convs) {
    const li = el('li', c.id === current ? 'here' : '');
    const open = el('button', 'open', c.title);
    open.type = 'button';
    open.onclick = () => { current = c.id; persist(); render(); };
    const del = el('button', 'delete', '\u00d7');
    del.type = 'button';
    del.title = 'Delete';
    del.onclick = () => {
      convs = convs.filter((x) => x.id !== c.id);
      if (current === c.id) current = convs[0]?.id ?? null;
      persist();
      render();
    };
    li.append(open, del);
    list.append(li);
  }
  const msgs = $('messages');
  msgs.replaceChildren(...conv().messages.map(messageView));
  msgs.scrollTop = msgs.scrollHeight;
}

function loadSettings() {
  const s = store.load('strata.settings', {});
  for (const id of settingIds) {
    if (s[id] === undefined) continue;
    if ($(id).type === 'checkbox') $(id).checked = s[id];
    else $(id).value = s[id];
  }
}

function saveSettings() {
  const s = {};
  for (const id of settingIds) s[id] = $(id).type === 'checkbox' ? $(id).checked : $(id).value;
  store.save('strata.settings', s);
}

function headers() {
  const h = { 'Content-Type': 'application/json' };
  if ($('api_key').value) h.Authorization = 'Bearer ' + $('api_key').value;
  return h;
}

function request(c) {
  const messages = [];
  if ($('system').value.trim()) messages.push({ role: 'system', content: $('system').value });
  for (const m of c.messages) if (m.content || m.role === 'user') {
    messages.push({ role: m.role, content: m.content });
  }
  return {
    messages,
    stream: true,
    temperature: Number($('temperature').value),
    top_p: Number($('top_p').value),
    max_tokens: Number($('max_tokens').value),
    enable_thinking: $('thinking').checked,
  };
}

// Server-Sent Events from a fetch body: each "data:" line's JSON, as it comes.
async function* events(body) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, nl);
      buf = buf.slice(nl + 2);
      for (const line of block.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') return;
        yield JSON.parse(data);
      }
    }
  }
}

async function send(text) {
  const c = conv();
  if (c.messages.length === 0) c.title = text.slice(0, 40) || 'New chat';
  c.messages.push({ role: 'user', content: text });
  const answer = { role: 'assistant', content: '', reasoning: '' };
  c.messages.push(answer);
  persist();
  render();
  const view = $('messages').lastElementChild;
  controller = new AbortController();
  $('send').disabled = true;
  $('stop').disabled = false;
  $('status').textContent = 'Generating...';
  const t0 = performance.now();
  let tokens = 0;
  try {
    const r = await fetch('/v1/chat/completions', {
      method: 'POST', headers: headers(), body: JSON.stringify(request(c)),
      signal: controller.signal,
    });
    if (!r.ok) {
      const e = await r.json().catch(() => ({}));
      throw new Error(e.error?.message || r.statusText);
    }
    for await (const ev of events(r.body)) {
      if (ev.error) throw new Error(ev.error.message);
      const d = ev.choices?.[0]?.delta ?? {};
      if (d.reasoning_content) {
        answer.reasoning += d.reasoning_content;
        view.querySelector('.reasoning').textContent = answer.reasoning;
        view.querySelector('.thinking').hidden = false;
      }
      if (d.content) {
        answer.content += d.content;
        view.querySelector('.content').textContent = answer.content;
        $('messages').scrollTop = $('messages').scrollHeight;
      }
      if (ev.usage) tokens = ev.usage.completion_tokens;
    }
    const s = (performance.now() - t0) / 1000;
    $('status').textContent = `${tokens} tokens in ${s.toFixed(1)} s`;
  } catch (e) {
    $('status').textContent = e.name === 'AbortError' ? 'Stopped.' : 'Error: ' + e.message;
  } finally {
    controller = null;
    $('send').disabled = false;
    $('stop').disabled = true;
    persist();
  }
}

$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = $('input').value.trim();
  if (!text || controller) return;
  $('input').value = '';
  send(text);
});
$('input').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    $('composer').requestSubmit();
  }
});
$('stop').addEventListener('click', () => controller?.abort());
$('new-chat').addEventListener('click', () => { current = null; conv(); persist(); render(); });
$('toggle-settings').addEventListener('click', () => { $('settings').hidden = !$('settings').hidden; });
for (const id of settingIds) $(id).addEventListener('change', saveSettings);

loadSettings();
render();
fetch('/v1/models', { headers: headers() }).then((r) => r.json())
  .then((j) => { $('model').textContent = j.data?.[0]?.id ?? ''; }).catch(() => {});
