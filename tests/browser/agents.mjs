// Networked agents across real network faults (issue 20): the real daemon
// in a network namespace of its own, two real `einsora-daemon agent`
// processes in two more, each across a veth pair, over mutual TLS; the
// CLI in this namespace, pinned. Both machines enrol from `einsora
// machines add`. Notebooks launched from the CLI run on both, the first's
// a real one (Jupyter in bubblewrap, its native driver): opened from this
// namespace through `einsora open`'s relay in Chromium, it goes through
// the server's access proxy and down that agent's tunnel, and a cell
// prints 42; its token never reaches the server. Then a notebook runs on
// the first machine (its sim driver alone), and its link is cut (`ip link
// set … down`): the workload's machine reads offline, then the workload
// fails at the (shortened) limit while the agent goes on; the link comes
// back and the agent stops it, as the offline rules say. The server is
// killed with SIGKILL while the agent's sync is held and started again:
// the agent comes back by itself. The second machine is revoked while its
// sync is held: refused at once. On the Lab test's harness.
//
// Needs root (ip netns); skipped without it. EINSORA_DAEMON, EINSORA_CLI:
// the binaries. Output is TAP, one test.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  artifactDir, check, fail, launchBrowser, makeTempDir, note, openAndRunCell, redact, runTest,
  state as harnessState, statePid, step, waitFor, workloadToken,
} from './harness.mjs';

const CPU_CLASS = 'cpu-1c-2g';
const IMAGE = 'jupyter-linux';
// Shortened offline rules (the daemon's test settings): offline after
// 3 s without a sync, failed after 25 s (a link cut for 7 s is back, and
// synced, well before, even under the sanitizers).
const OFFLINE_AFTER_MS = 3000;
const FAILED_AFTER_MS = 25000;
// Short names: an interface's is at most 15 bytes.
const tag = String(process.pid % 100000);
const SERVER_NS = `einsora-srv-${tag}`;
const octet = process.pid % 250;
// One /30 per link, in 10.245-247.0.0/16 (the Lab test uses 10.244): the
// laptop's, and each agent's; nothing leaves the namespaces.
const LINKS = {
  laptop: { server: `10.245.${octet}.1`, peer: `10.245.${octet}.2`, serverIf: `esl${tag}`,
    peerIf: `ell${tag}`, ns: null },
  a: { server: `10.246.${octet}.1`, peer: `10.246.${octet}.2`, serverIf: `esa${tag}`,
    peerIf: `eaa${tag}`, ns: `einsora-aga-${tag}` },
  b: { server: `10.247.${octet}.1`, peer: `10.247.${octet}.2`, serverIf: `esb${tag}`,
    peerIf: `eab${tag}`, ns: `einsora-agb-${tag}` },
};

const state = Object.assign(harnessState, {
  screenshotPrefix: 'einsora-agents-test',
  namespaces: [], // made
  links: [], // veth names in this namespace, made
  dir: null,
  dataDir: null,
  logPath: null,
  configHome: null,
  daemon: null,
  daemonExit: null,
  apiPort: null,
  accessPort: null, // the access proxy's, on the laptop's link
  fingerprint: null,
  ownerToken: null,
  agents: {}, // name -> { dir, logPath, runDir, child, exit }
  relay: null, // the `einsora open` ChildProcess
  workloads: [], // to delete at the end
});

function ip(...args) {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function inNs(ns, ...args) {
  return ns ? ['netns', 'exec', ns, ...args] : args;
}

// `ip ARGS` in @ns (null: this namespace).
function ipIn(ns, ...args) {
  if (ns) ip('netns', 'exec', ns, 'ip', ...args);
  else ip(...args);
}

function makeNetwork() {
  ip('netns', 'add', SERVER_NS);
  state.namespaces.push(SERVER_NS);
  ipIn(SERVER_NS, 'link', 'set', 'lo', 'up');
  for (const link of Object.values(LINKS)) {
    if (link.ns) {
      ip('netns', 'add', link.ns);
      state.namespaces.push(link.ns);
      ipIn(link.ns, 'link', 'set', 'lo', 'up');
    }
    ip('link', 'add', link.peerIf, 'type', 'veth', 'peer', 'name', link.serverIf);
    state.links.push(link.peerIf);
    ip('link', 'set', link.serverIf, 'netns', SERVER_NS);
    if (link.ns) ip('link', 'set', link.peerIf, 'netns', link.ns);
    ipIn(link.ns, 'addr', 'add', `${link.peer}/30`, 'dev', link.peerIf);
    ipIn(link.ns, 'link', 'set', link.peerIf, 'up');
    ipIn(SERVER_NS, 'addr', 'add', `${link.server}/30`, 'dev', link.serverIf);
    ipIn(SERVER_NS, 'link', 'set', link.serverIf, 'up');
  }
}

function readLog(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function logTail(file, lines = 30) {
  return readLog(file).split('\n').slice(-lines).join('\n');
}

/* The server */

async function startDaemon() {
  const daemonPath = process.env.EINSORA_DAEMON;
  check(daemonPath && fs.existsSync(daemonPath), 'EINSORA_DAEMON is not the einsora-daemon binary');
  const env = { ...process.env };
  delete env.EINSORA_DATA_DIR;
  Object.assign(env, {
    EINSORA_DRIVERS: '', // the server's own machine runs nothing: the agents do
    EINSORA_AGENT_RUN_DIR: path.join(state.dir, 'run'),
    EINSORA_CONTROLLER_INTERVAL: '200ms',
    EINSORA_TEST_MACHINE_OFFLINE_AFTER_MS: String(OFFLINE_AFTER_MS),
    EINSORA_TEST_MACHINE_FAILED_AFTER_MS: String(FAILED_AFTER_MS),
    // A held sync counts when it arrived: held for less than the offline
    // limit, as 20 s is less than 45 s.
    EINSORA_TEST_SYNC_LONG_POLL_MS: '1000',
    G_MESSAGES_DEBUG: 'all',
  });
  const start = fs.statSync(state.logPath, { throwIfNoEntry: false })?.size ?? 0;
  const log = fs.openSync(state.logPath, 'a', 0o600);
  // Every address of its namespace: its three links, and nothing else.
  state.daemon = spawn('ip', inNs(SERVER_NS, '/usr/bin/setpriv', '--pdeathsig', 'KILL', '--',
    daemonPath, '--data-dir', state.dataDir, '--listen', `0.0.0.0:${state.apiPort ?? 0}`,
    // The access proxy on the laptop's link (TLS of its own off
    // loopback): `einsora open` relays to it.
    '--access-listen', `${LINKS.laptop.server}:${state.accessPort ?? 0}`),
  { env, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  let exited = null;
  state.daemonExit = new Promise((resolve) => {
    state.daemon.on('exit', (code, signal) => resolve({ code, signal }));
  });
  state.daemonExit.then((how) => { exited = how; });
  const found = await waitFor('the daemon listening', () => {
    if (exited)
      fail(`einsora-daemon exited (${exited.code ?? exited.signal}) before it was ready:\n` +
        logTail(state.logPath));
    const text = readLog(state.logPath).slice(start);
    const api = /api listening on https:\/\/[0-9.]+:(\d+)\//.exec(text);
    const access = /access proxy listening on https:\/\/[0-9.]+:(\d+)\//.exec(text);
    const fingerprint = /, fingerprint (SHA256:[0-9a-f]{64})/.exec(text);
    return api && access && fingerprint && /ready: region/.test(text)
      ? { apiPort: Number(api[1]), accessPort: Number(access[1]), fingerprint: fingerprint[1] }
      : null;
  }, 50);
  if (state.fingerprint) check(found.fingerprint === state.fingerprint, 'a new certificate');
  Object.assign(state, found);
  if (!state.ownerToken) {
    state.ownerToken = fs.readFileSync(path.join(state.dataDir, 'token'), 'utf8').trim();
    state.secrets.set('owner token', state.ownerToken);
  }
}

async function killDaemon() {
  const daemon = state.daemon;
  state.daemon = null;
  daemon.kill('SIGKILL');
  const how = await state.daemonExit;
  check(how.signal === 'SIGKILL', `einsora-daemon ended with ${how.code ?? how.signal}`);
}

async function stopDaemon() {
  if (!state.daemon) return;
  const daemon = state.daemon;
  state.daemon = null;
  if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGTERM');
  const exited = await Promise.race([state.daemonExit, sleep(30_000, null, { ref: false })]);
  if (!exited) {
    daemon.kill('SIGKILL');
    await state.daemonExit;
    fail('einsora-daemon did not stop within 30 s of SIGTERM');
  }
  check(exited.code === 0, `einsora-daemon stopped with ${exited.code ?? exited.signal}:\n` +
    logTail(state.logPath));
}

/* The laptop's CLI */

function cliEnv() {
  const env = { ...process.env, EINSORA_SERVER: `https://${LINKS.laptop.server}:${state.apiPort}`,
    XDG_CONFIG_HOME: state.configHome, LC_ALL: 'C.UTF-8', EINSORA_TOKEN: state.ownerToken };
  delete env.EINSORA_DATA_DIR;
  return env;
}

async function cli(...args) {
  const cliPath = process.env.EINSORA_CLI;
  check(cliPath && fs.existsSync(cliPath), 'EINSORA_CLI is not the einsora binary');
  const child = spawn(cliPath, args, { env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => { out += chunk; });
  child.stderr.on('data', (chunk) => { err += chunk; });
  const code = await new Promise((resolve) => child.on('close', resolve));
  return { code, out, err };
}

async function cliJson(...args) {
  const run = await cli('--json', ...args);
  check(run.code === 0, `einsora ${args.join(' ')}: ${run.code}: ${run.err}`);
  return JSON.parse(run.out);
}

async function machine(id) {
  const list = await cliJson('machines');
  return list.machines.find((item) => item.id === id) ?? null;
}

async function exportWorkload(id) {
  return cliJson('export', id);
}

async function launchNotebook() {
  const workload = await cliJson('launch', '--kind', 'notebook', '--class', CPU_CLASS,
    '--image', IMAGE);
  state.workloads.push(workload.id);
  return workload;
}

async function deleteWorkloads() {
  for (const id of state.workloads.splice(0)) {
    const run = await cli('delete', id);
    check(run.code === 0, `einsora delete ${id}: ${run.code}: ${run.err}`);
    await waitForState(id, 'deleted');
  }
}

// The link `einsora open ID` prints: its relay, on this namespace's
// loopback, runs until SIGINT.
async function startRelay(id) {
  const child = spawn(process.env.EINSORA_CLI, ['open', id],
    { env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  state.relay = child;
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => { out += chunk; });
  child.stderr.on('data', (chunk) => { err += chunk; note(`einsora open: ${chunk}`); });
  return waitFor(() => `einsora open printed no link: ${err}`, () => {
    check(child.exitCode === null, `einsora open exited ${child.exitCode}: ${err}`);
    const end = out.indexOf('\n');
    return end >= 0 ? out.slice(0, end) : null;
  }, 50);
}

// One GET to the relay on this namespace's loopback, as @host (the
// relay's link names w-<id>.localhost, which node doesn't resolve).
function httpGet(port, host, pathAndQuery, headers) {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: pathAndQuery,
      headers: { Host: host, ...headers } }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => { body += chunk; });
      response.on('end', () => resolve({ status: response.statusCode,
        headers: response.headers, body }));
    });
    request.on('error', reject);
  });
}

async function stopRelay() {
  const child = state.relay;
  if (!child) return;
  state.relay = null;
  if (child.exitCode !== null) return;
  const closed = new Promise((resolve) => child.on('close', (code, signal) =>
    resolve({ code, signal })));
  child.kill('SIGINT');
  const how = await closed;
  check(how.code === 0, `einsora open ended with ${how.code ?? how.signal} on SIGINT`);
}

/* The agents */

// `einsora-daemon --data-dir DIR agent ARGS` in @name's namespace.
function spawnAgent(name, args, extraEnv = {}) {
  const agent = state.agents[name];
  const env = { ...process.env, EINSORA_DRIVERS: 'sim', EINSORA_AGENT_RUN_DIR: agent.runDir,
    G_MESSAGES_DEBUG: 'all', ...extraEnv };
  delete env.EINSORA_DATA_DIR;
  const log = fs.openSync(agent.logPath, 'a', 0o600);
  const child = spawn('ip', inNs(LINKS[name].ns, '/usr/bin/setpriv', '--pdeathsig', 'KILL', '--',
    process.env.EINSORA_DAEMON, '--data-dir', agent.dir, 'agent', ...args),
  { env, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  const exit = new Promise((resolve) => child.on('exit', (code, signal) =>
    resolve({ code, signal })));
  return { child, exit };
}

async function enrol(name) {
  const agent = { dir: makeTempDir(`einsora-agent-${name}-`), logPath: null };
  agent.logPath = path.join(agent.dir, 'agent.log');
  // Its notebooks' sockets need a short path: <run dir>/<uuid>/notebook.sock.
  agent.runDir = path.join(makeTempDir(`ea${name}-`, '/tmp'), 'run');
  state.agents[name] = agent;
  const made = await cliJson('machines', 'add', '--name', `box-${name}`);
  state.secrets.set(`enrolment token ${name}`, made.token);
  check(made.command.includes(`--fingerprint ${state.fingerprint}`), made.command);
  const join = spawnAgent(name, ['--join', `https://${LINKS[name].server}:${state.apiPort}`,
    '--token', made.token, '--fingerprint', state.fingerprint]);
  const how = await join.exit;
  check(how.code === 0, `the join of ${name} ended with ${how.code ?? how.signal}:\n` +
    logTail(agent.logPath));
  agent.id = fs.readFileSync(path.join(agent.dir, 'agent', 'machine-id'), 'utf8').trim();
  note(`machine ${name}: ${agent.id}`);
}

function startAgent(name, extraEnv) {
  const agent = state.agents[name];
  // The server's log from here on says when its hub sees it.
  agent.since = readLog(state.logPath).length;
  Object.assign(agent, spawnAgent(name, [], extraEnv));
}

async function stopAgent(name) {
  const agent = state.agents[name];
  if (!agent?.child || agent.child.exitCode !== null || agent.child.signalCode !== null) return;
  agent.child.kill('SIGTERM');
  const how = await Promise.race([agent.exit, sleep(20_000, null, { ref: false })]);
  if (!how) {
    agent.child.kill('SIGKILL');
    fail(`agent ${name} did not stop within 20 s of SIGTERM`);
  }
}

function agentAlive(name) {
  const child = state.agents[name].child;
  return child.exitCode === null && child.signalCode === null;
}

// Online, offering @driver (the native driver only once its probe
// passed): the hub saw it since it was started (the API's status is
// "online" for minutes after its last sync), and the API lists @driver.
async function waitOnline(name, driver = 'sim') {
  const agent = state.agents[name];
  const online = new RegExp(`machine ${agent.id} \\(box-${name}\\) is online`);
  return waitFor(() => `machine ${name} never came online with ${driver}:\n` +
    logTail(agent.logPath), async () => {
    if (!online.test(readLog(state.logPath).slice(agent.since ?? 0))) return null;
    const seen = await machine(agent.id);
    return seen?.status === 'online' && seen.drivers?.includes(driver) ? seen : null;
  }, 200);
}

// Offline to the hub, which places nothing there then: it said so in
// the server's log after @since.
async function waitOffline(name, since) {
  const id = state.agents[name].id;
  const offline = new RegExp(`machine ${id} \\(box-${name}\\) is offline`);
  return waitFor(() => `the server never saw machine ${name} offline:\n${logTail(state.logPath)}`,
    () => offline.test(readLog(state.logPath).slice(since)), 200);
}

// Whether the workload's timeline has an event whose reason says @what.
function hasReason(record, what) {
  return JSON.stringify(record.events ?? record.timeline ?? []).includes(what);
}

async function waitForState(id, wanted) {
  let last = null;
  return waitFor(() => `workload ${id} is ${last}, not ${wanted}`, async () => {
    const record = await exportWorkload(id);
    if (record.workload.state !== last) {
      last = record.workload.state;
      note(`workload ${id}: ${last}`);
    }
    if (['failed', 'deleted'].includes(last) && last !== wanted)
      fail(`workload ${id} is ${last}, waiting for ${wanted}: ${JSON.stringify(record).slice(-1500)}`);
    return last === wanted ? record : null;
  }, 200);
}

async function run() {
  state.dir = makeTempDir('einsora-agents-test-');
  state.dataDir = path.join(state.dir, 'data');
  state.logPath = path.join(state.dir, 'daemon.log');
  state.configHome = path.join(state.dir, 'config');
  fs.mkdirSync(state.configHome, { mode: 0o700 });

  await step('make the server, the laptop and two agent machines', () => makeNetwork());
  await step('start the server', startDaemon);
  await step('pin its certificate from the laptop', async () => {
    const login = await cli('login', `https://${LINKS.laptop.server}:${state.apiPort}`,
      '--fingerprint', state.fingerprint);
    check(login.code === 0, `einsora login: ${login.code}: ${login.err}`);
  });
  await step('enrol both machines with `einsora machines add`', async () => {
    await enrol('a');
    await enrol('b');
  });
  await notebooksThroughTheTunnel();
  let workload;
  await step('agent a comes online and runs a notebook', async () => {
    startAgent('a');
    await waitOnline('a');
    workload = await cliJson('launch', '--kind', 'notebook', '--class', CPU_CLASS,
      '--image', IMAGE);
    const record = await waitForState(workload.id, 'running');
    check(record.workload.machine_id === state.agents.a.id,
      `placed on ${record.workload.machine_id}, not on machine a`);
  });
  await step('a\'s long polls go over one connection: one TLS handshake, not one each', async () => {
    const connections = () =>
      (readLog(state.agents.a.logPath).match(/GSocketClient: Starting new address enumeration/g)
        ?? []).length;
    const before = connections();
    await sleep(5000); // five 1 s long polls
    const made = connections() - before;
    note(`${made} new connection(s) in 5 s of long polls`);
    check(made <= 1, `agent a made ${made} connections in 5 s of 1 s long polls`);
  });
  await step('cut a\'s link: offline, then failed at the limit; the agent goes on', async () => {
    const cutAt = Date.now();
    ipIn(LINKS.a.ns, 'link', 'set', LINKS.a.peerIf, 'down');
    // The limits count from the last sync the server had (a held one
    // counts when it arrived).
    const lastSeen = Date.parse((await machine(state.agents.a.id)).last_seen_at);
    await waitFor('no offline reason on the timeline', async () =>
      hasReason(await exportWorkload(workload.id), 'its machine is offline'), 200);
    const failed = await waitForState(workload.id, 'failed');
    const failedAt = Date.parse(failed.events.at(-1).created_at);
    note(`failed ${((Date.now() - cutAt) / 1000).toFixed(1)} s after the cut, ` +
      `${((failedAt - lastSeen) / 1000).toFixed(1)} s after the last sync`);
    check(failedAt - lastSeen >= FAILED_AFTER_MS,
      `failed ${failedAt - lastSeen} ms after the last sync, before the ${FAILED_AFTER_MS} ms limit`);
    check(hasReason(failed, 'offline for over'), `no away-too-long reason: ${JSON.stringify(failed)}`);
    check(agentAlive('a'), 'agent a exited while its link was down');
    // The notebook still runs there: the agent never stopped it.
    check(!new RegExp(`workload ${workload.id}: stop with sim`).test(
      readLog(state.agents.a.logPath)), 'agent a stopped the notebook while cut off');
  });
  await step('restore it: the agent syncs again and stops the failed notebook', async () => {
    ipIn(LINKS.a.ns, 'link', 'set', LINKS.a.peerIf, 'up');
    await waitOnline('a');
    await waitFor(() => `agent a never stopped ${workload.id}:\n${logTail(state.agents.a.logPath)}`,
      () => new RegExp(`workload ${workload.id}: stop with sim`)
        .test(readLog(state.agents.a.logPath)), 200);
    const record = await exportWorkload(workload.id);
    check(record.workload.state === 'failed', `now ${record.workload.state}`);
  });
  await step('kill -9 the server while a\'s sync is held; it comes back by itself', async () => {
    await sleep(1000); // a's next sync is held now
    await killDaemon();
    const before = (await fs.promises.readFile(state.logPath, 'utf8')).length;
    const killedAt = Date.now();
    await startDaemon();
    // Its new hub's first sync from a (the store still says online).
    await waitFor(() => `the restarted server saw no sync from a:\n${logTail(state.logPath)}`,
      () => new RegExp(`machine ${state.agents.a.id} \\(box-a\\) is online`)
        .test(readLog(state.logPath).slice(before)), 100);
    note(`a synced with the new server ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
    check(agentAlive('a'), 'agent a exited with the server');
  });
  await step('a notebook runs and ends on b while b is cut off: its outbox replays it', async () => {
    await stopAgent('a');
    // Started 3 s after it is asked, it runs for 2 s and ends by itself.
    startAgent('b', { EINSORA_SIM_START_DELAY_MS: '3000', EINSORA_SIM_EXIT_AFTER_MS: '2000' });
    await waitOnline('b');
    await sleep(OFFLINE_AFTER_MS + 1000); // a reads offline: b is the machine to place on
    const short = await cliJson('launch', '--kind', 'notebook', '--class', CPU_CLASS,
      '--image', IMAGE);
    await waitFor(() => `agent b was never told to start ${short.id}`,
      () => new RegExp(`workload ${short.id}: start with sim`)
        .test(readLog(state.agents.b.logPath)), 50);
    ipIn(LINKS.b.ns, 'link', 'set', LINKS.b.peerIf, 'down');
    await sleep(7000);
    check(/going on|sync failed/.test(readLog(state.agents.b.logPath)), 'b never missed a sync');
    ipIn(LINKS.b.ns, 'link', 'set', LINKS.b.peerIf, 'up');
    const record = await waitFor(() => `${short.id} never ended`, async () => {
      const seen = await exportWorkload(short.id);
      return ['stopped', 'failed'].includes(seen.workload.state) ? seen : null;
    }, 200);
    const states = record.events.filter((event) => !event.note).map((event) => event.to_state);
    note(`its timeline: ${record.events.filter((event) => !event.note).map((event) =>
      `${event.to_state} at ${event.created_at.slice(11, 23)}`).join(" -> ")}`);
    // Both changes happened while the link was down: only the replay
    // can tell the server it ran.
    check(states.includes('running') && states.indexOf('running') < states.length - 1,
      `no running before its end: ${JSON.stringify(record.events)}`);
    check(!hasReason(record, 'offline for over'), 'failed as away too long');
  });
  await step('revoke b: its agent is refused at once', async () => {
    const revoked = await cli('machines', 'revoke', state.agents.b.id);
    check(revoked.code === 0, `einsora machines revoke: ${revoked.code}: ${revoked.err}`);
    // A sync held then is refused in the same turn (einsora-agent-sync-test
    // shows it; here the long poll is 1 s), and every later one: within a
    // sync's round trip, a handshake included, not at the end of a poll.
    const revokedAt = Date.now();
    await waitFor(() => `agent b wasn't refused:\n${logTail(state.agents.b.logPath)}`,
      () => /refused the sync: [^\n]*revoked/.test(readLog(state.agents.b.logPath)), 50);
    const took = Date.now() - revokedAt;
    note(`agent b refused within ${took} ms of the revocation's answer`);
    check(took < 10000, `agent b refused only ${took} ms after the revocation's answer`);
  });
  await step('nothing secret in the logs', () => {
    const logs = [state.logPath, state.agents.a.logPath, state.agents.b.logPath]
      .map(readLog).join('\n');
    for (const [name, value] of state.secrets)
      check(!logs.includes(value), `the ${name} is in a log`);
  });
}

// Notebooks on both machines from the CLI, and a's, a real one (Jupyter in
// bubblewrap, its native driver), opened from the laptop through the
// server's access proxy: the proxy sends it down a's tunnel (GET
// /agent/v1/tunnel, held by the agent), and a cell prints 42 over its
// kernel's WebSocket. The notebook's own token stays on a. Both agents
// stop at the end, their notebooks deleted: the next steps start them
// again with the sim driver alone.
async function notebooksThroughTheTunnel() {
  let onA;
  let onB;
  await step('agent b comes online and runs a notebook (sim)', async () => {
    // Room for one notebook: the next one goes to a.
    startAgent('b', { EINSORA_SIM_CPUS: '1' });
    await waitOnline('b');
    onB = await launchNotebook();
    const record = await waitForState(onB.id, 'running');
    check(record.workload.machine_id === state.agents.b.id,
      `placed on ${record.workload.machine_id}, not on machine b`);
  });
  await step('agent a comes online with the native driver and runs a notebook in bubblewrap',
    async () => {
      startAgent('a', { EINSORA_DRIVERS: 'sim,linux-native' });
      await waitOnline('a', 'linux-native');
      onA = await launchNotebook();
      const record = await waitForState(onA.id, 'running');
      check(record.workload.machine_id === state.agents.a.id,
        `placed on ${record.workload.machine_id}, not on machine a`);
      const pid = statePid(path.join(state.agents.a.runDir, `${onA.id}.state`));
      check(pid > 1, `${onA.id}.state on a names no process`);
      const command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
      check(command.endsWith('bwrap'), `the notebook's process is ${command}, not bwrap`);
      state.secrets.set('workload token', workloadToken(state.agents.a.runDir, onA.id));
    });
  const host = `w-${onA.id}.localhost`;
  const before = readLog(state.logPath).length;
  const link = await step("open a's notebook through einsora open's relay", async () => {
    const line = await startRelay(onA.id);
    const url = new URL(line);
    check(url.hostname === host, `the relay's link is at ${url.hostname}, not ${host}`);
    check(url.protocol === 'http:' && Number(url.port) !== state.accessPort,
      `the relay's link is ${url.protocol}//…:${url.port}: not the laptop's own relay`);
    const ticket = url.searchParams.get('ticket');
    check(ticket, 'the link has no ticket');
    state.secrets.set('ticket', ticket);
    return line;
  });
  if (process.env.EINSORA_SANITIZED === '1') {
    // Under the sanitizers a TLS handshake takes seconds, and each request
    // through a tunnel is one: a notebook's page load, dozens of them, takes
    // minutes. A few requests through the relay instead: the same code
    // paths, proxy, tunnel and agent, under the sanitizers.
    await step("through the relay: the ticket, Jupyter's API and its tree page", async () => {
      const url = new URL(link);
      const port = Number(url.port);
      const opened = await httpGet(port, url.host, `${url.pathname}${url.search}`, {});
      check(opened.status === 200, `opening answered ${opened.status}: ${opened.body}`);
      const cookie = String(opened.headers['set-cookie'] ?? '').split(';')[0];
      check(cookie.includes('='), 'opening set no session cookie');
      state.secrets.set('session cookie', cookie.slice(cookie.indexOf('=') + 1));
      const status = await httpGet(port, url.host, '/api/status', { Cookie: cookie });
      check(status.status === 200 && 'started' in JSON.parse(status.body),
        `/api/status through the tunnel: ${status.status}: ${status.body}`);
      const tree = await httpGet(port, url.host, '/tree', { Cookie: cookie });
      check(tree.status === 200 && /jupyter/i.test(tree.body),
        `/tree through the tunnel: ${tree.status}: ${tree.body.slice(0, 300)}`);
      check(!tree.body.includes(state.secrets.get('workload token')),
        "the tree page holds the notebook's token");
    });
    await step('stop the relay', stopRelay);
  } else {
    const context = await step('start chromium', () =>
      launchBrowser(makeTempDir('einsora-agents-chromium-')));
    // What went slowly or failed through the tunnel, said (a 404'd
    // script is aborted: not news).
    context.on('requestfailed', (request) => {
      if (request.failure()?.errorText !== 'net::ERR_ABORTED')
        note(`failed: ${request.method()} ${new URL(request.url()).pathname}: ` +
          `${request.failure()?.errorText}`);
    });
    context.on('requestfinished', (request) => {
      const timing = request.timing();
      if (timing.responseEnd > 5000)
        note(`slow: ${request.method()} ${new URL(request.url()).pathname}: ` +
          `${(timing.responseStart / 1000).toFixed(1)} s to its head, ` +
          `${(timing.responseEnd / 1000).toFixed(1)} s to its end`);
    });
    await openAndRunCell(context, link, host);
    await step('close chromium and the relay', async () => {
      await state.context.close();
      state.context = null;
      await stopRelay();
    });
  }
  await step("it went down a's tunnels", () => {
    // Each stream the proxy takes, a opens again (the server's debug log).
    const text = readLog(state.logPath).slice(before);
    const opened = (id) =>
      (text.match(new RegExp(`machine ${id} opened a tunnel`, 'g')) ?? []).length;
    note(`a opened ${opened(state.agents.a.id)} tunnel stream(s) while it was open, ` +
      `b ${opened(state.agents.b.id)}`);
    check(opened(state.agents.a.id) > 0, 'agent a opened no tunnel stream while its notebook ' +
      'was open');
    check(!/no tunnel from machine/.test(text),
      `the proxy found no tunnel:\n${logTail(state.logPath)}`);
  });
  await step("the notebook's token is nowhere in the server's files", () => {
    const token = state.secrets.get('workload token');
    const files = fs.readdirSync(state.dataDir, { recursive: true })
      .map((name) => path.join(state.dataDir, name))
      .filter((file) => fs.statSync(file, { throwIfNoEntry: false })?.isFile());
    for (const file of files)
      check(!fs.readFileSync(file, 'latin1').includes(token),
        `the server's ${path.relative(state.dataDir, file)} holds the workload token`);
  });
  await step('delete both notebooks and stop both agents', async () => {
    await deleteWorkloads();
    const stoppedAt = readLog(state.logPath).length;
    await stopAgent('a');
    await stopAgent('b');
    // Neither is a place for the next notebook until it comes back.
    await waitOffline('a', stoppedAt);
    await waitOffline('b', stoppedAt);
  });
}

/* The test */

async function cleanUp(attempt) {
  if (state.relay) await attempt('stopping the relay', stopRelay);
  if (state.context) await attempt('closing chromium', () => state.context.close());
  if (state.workloads.length && state.daemon)
    await attempt('deleting the workloads', () => Promise.race([deleteWorkloads(),
      sleep(60_000, null, { ref: false })]));
  for (const name of Object.keys(state.agents))
    await attempt(`stopping agent ${name}`, () => stopAgent(name));
  // A notebook in bubblewrap has a network namespace of its own: what its
  // state file names, in case its agent didn't stop it.
  for (const agent of Object.values(state.agents)) {
    let names = [];
    try {
      names = fs.readdirSync(agent.runDir);
    } catch {
      // never made
    }
    for (const name of names.filter((item) => item.endsWith('.state')))
      await attempt(`the process group of ${name}`, () => {
        const pid = statePid(path.join(agent.runDir, name));
        if (pid > 1) {
          try {
            process.kill(-pid, 'SIGKILL');
          } catch (error) {
            if (error.code !== 'ESRCH') throw error;
          }
        }
      });
  }
  await attempt('stopping the daemon', stopDaemon);
  for (const ns of state.namespaces.reverse()) {
    await attempt(`the processes left in ${ns}`, () => {
      const pids = execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' })
        .split('\n').filter(Boolean).map(Number);
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch (error) {
          if (error.code !== 'ESRCH') throw error;
        }
      }
    });
    await attempt(`deleting ${ns}`, () => ip('netns', 'del', ns));
  }
  for (const link of state.links)
    await attempt(`the link ${link}`, () => {
      try {
        ip('link', 'del', link);
      } catch {
        // went with its namespace
      }
    });
  await attempt('keeping the logs', keepLogs);
  for (const dir of state.dirs.reverse())
    await attempt(`removing ${dir}`, () =>
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 }));
}

function logs() {
  return [['server', state.logPath],
    ...Object.entries(state.agents).map(([name, agent]) => [`agent ${name}`, agent.logPath])]
    .filter(([, file]) => file);
}

// Its logs' last lines, while they are there.
function noteLogs() {
  for (const [what, file] of logs())
    note(`${what}'s log, last lines:\n${logTail(file, 20)}`);
}

// The whole logs, secrets redacted, in the artifacts' directory (the
// build's meson-logs) when there is one, before the temp dirs go.
function keepLogs() {
  const dir = artifactDir();
  if (!dir) return;
  for (const [what, file] of logs()) {
    const kept = path.join(dir, `einsora-agents-test-${what.replace(' ', '-')}.log`);
    fs.writeFileSync(kept, redact(readLog(file)), { mode: 0o600 });
    note(`${what}'s log: ${kept}`);
  }
}

await runTest({
  passed: 'networked agents through a cut link, a server kill -9 and a revocation',
  failed: 'networked agents through a cut link',
  run,
  cleanUp,
  skip: process.getuid?.() !== 0 ? 'network namespaces need root' : null,
  beforeCleanUp: noteLogs,
});
