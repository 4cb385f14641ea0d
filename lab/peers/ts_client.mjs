// Real MCP client built on the official TypeScript SDK. Driven by a JSON plan (file path in argv[2]).
// Plan: {"transport":"streamable"|"legacy-sse"|"stdio", "url":..., "command":[...], "observe": "out.json", "quiet": bool,
//        "steps":[{"op":"call","tool":..,"args":{..},"timeout_ms":..,"progress":bool,
//                  "on_error":{"action":"retry"|"reconnect_retry","delay_ms":N}}, {"op":"sleep","ms":N}]}
// The script records what the SDK did (result / exception) per attempt into plan.observe.
import fs from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const plan = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const observations = { client: 'typescript-sdk', transport: plan.transport, events: [] };
const t0 = Date.now();
const note = (ev) => {
  ev.t_ms = Date.now() - t0;
  process.stderr.write(`[ts_client] ${JSON.stringify(ev)}\n`);
  // plan.quiet (long sessions): count first attempts that returned, record everything else in full
  if (plan.quiet && ev.event === 'call' && ev.outcome === 'returned' && ev.attempt === 1) {
    const k = `${ev.tool}${ev.isError ? ' (isError)' : ''}`;
    observations.returned = observations.returned ?? {};
    observations.returned[k] = (observations.returned[k] ?? 0) + 1;
    return;
  }
  observations.events.push(ev);
};
const save = () => fs.writeFileSync(plan.observe, JSON.stringify(observations, null, 2) + '\n');

function makeTransport() {
  if (plan.transport === 'streamable') {
    return new StreamableHTTPClientTransport(new URL(plan.url), {
      // SDK defaults except fewer/faster reconnection attempts so a lab run stays short.
      reconnectionOptions: { initialReconnectionDelay: 500, maxReconnectionDelay: 2000, reconnectionDelayGrowFactor: 1.5, maxRetries: 2 },
    });
  }
  if (plan.transport === 'legacy-sse') return new SSEClientTransport(new URL(plan.url));
  if (plan.transport === 'stdio') return new StdioClientTransport({ command: plan.command[0], args: plan.command.slice(1), stderr: 'inherit' });
  throw new Error('unknown transport ' + plan.transport);
}

let client;
let transport;
async function connect() {
  transport = makeTransport();
  client = new Client({ name: 'lab-ts-client', version: '1.0.0' });
  client.onerror = (e) => note({ event: 'client.onerror', error_name: e?.name, message: String(e?.message ?? e) });
  await client.connect(transport);
  note({ event: 'connected', protocol_version: transport.protocolVersion ?? null, session_id: transport.sessionId ?? null });
  const tools = await client.listTools();
  note({ event: 'tools/list', tools: tools.tools.map((t) => t.name) });
}

function describeError(e) {
  return { error_name: e?.constructor?.name ?? e?.name, code: e?.code ?? null, message: String(e?.message ?? e) };
}

async function callOnce(step, attempt) {
  const opts = { timeout: step.timeout_ms ?? 10000 };
  let progress = 0;
  if (step.progress) opts.onprogress = () => { progress += 1; };
  const started = Date.now();
  try {
    const res = await client.callTool({ name: step.tool, arguments: step.args ?? {} }, undefined, opts);
    note({ event: 'call', tool: step.tool, attempt, outcome: 'returned', isError: res.isError ?? false, progress_seen: progress, text: res.content?.[0]?.text ?? null, elapsed_ms: Date.now() - started });
    return true;
  } catch (e) {
    note({ event: 'call', tool: step.tool, attempt, outcome: 'threw', progress_seen: progress, elapsed_ms: Date.now() - started, ...describeError(e) });
    return false;
  }
}

try {
  await connect();
  for (const step of plan.steps) {
    if (step.op === 'sleep') { await new Promise((r) => setTimeout(r, step.ms)); continue; }
    if (step.op === 'call') {
      const ok = await callOnce(step, 1);
      const oe = step.on_error;
      if (!ok && oe) {
        await new Promise((r) => setTimeout(r, oe.delay_ms ?? 0));
        if (oe.action === 'reconnect_retry') {
          try { await client.close(); } catch {}
          note({ event: 'script.reconnect' });
          await connect();
        }
        note({ event: 'script.retry', tool: step.tool, delay_ms: oe.delay_ms ?? 0 });
        await callOnce(step, 2);
      }
    }
  }
} catch (e) {
  note({ event: 'fatal', ...describeError(e) });
} finally {
  try { await client?.close(); } catch {}
  note({ event: 'closed' });
  save();
  setTimeout(() => process.exit(0), 200);
}
