#!/usr/bin/env node
/*
 * bench.mjs - the llama.cpp peer of strata-bench: the same pp/tg tests, run
 * through node-llama-cpp's prebuilt CPU build of llama.cpp, so that
 * tools/bench.sh can report strata/llama.cpp speed ratios measured on one
 * machine in one session.
 *
 *   pp N: N random tokens decoded as one batch into an empty context (logits
 *         of the last token only, as llama-bench's llama_batch_get_one does);
 *   tg N: N single-token decodes into an empty context.
 * Each test runs once as a warm-up, then R times; median, min and max are
 * printed in strata-bench's table layout.
 *
 * The public node-llama-cpp API wraps every decode in a JS batching queue and
 * a sampler, so this script drives the addon's native context directly
 * (AddonContext: initBatch/addToBatch/decodeBatch = llama_decode +
 * llama_synchronize on a libuv worker).  Even that costs a thread hop and a
 * promise per decode, which would be charged to llama.cpp on tiny models, so
 * the reported speed comes from llama.cpp's own decode timer
 * (llama_perf_context, read through printTimings), which brackets exactly
 * llama_decode..llama_synchronize like llama-bench's clock does.  The JS
 * wall-clock speed is printed beside it so the overhead stays visible.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));

function usage(out) {
	out.write(
		"usage: node bench.mjs -m MODEL [-t THREADS] [-p N_PROMPT] [-n N_GEN] [-r REPS] [--fa on|off|auto] [-v]\n" +
			"  -m MODEL    GGUF model\n" +
			"  -t N        threads (default: all online CPUs)\n" +
			"  -p N        prompt test: one batch of N tokens (default 512; 0 = skip)\n" +
			"  -n N        decode test: N single-token steps (default 128; 0 = skip)\n" +
			"  -r N        repetitions after one warm-up (default 5); the median is reported\n" +
			"  --fa MODE   flash attention on|off|auto (default auto, as llama-bench)\n" +
			"  -v          pass llama.cpp's warnings through to stderr\n"
	);
}

function die(msg) {
	process.stderr.write(`peer-bench: error: ${msg}\n`);
	process.exit(1);
}

function intArg(opts, name, dflt, min) {
	if (opts[name] === undefined)
		return dflt;
	const s = opts[name];
	if (!/^\d+$/.test(s) || Number(s) < min)
		die(`-${name} needs a number >= ${min}, got '${s}'`);
	return Number(s);
}

function parseCli() {
	let parsed;
	try {
		parsed = parseArgs({
			options: {
				m: { type: "string" },
				t: { type: "string" },
				p: { type: "string" },
				n: { type: "string" },
				r: { type: "string" },
				fa: { type: "string" },
				v: { type: "boolean" },
				h: { type: "boolean" },
			},
			allowPositionals: false,
		});
	} catch (err) {
		process.stderr.write(`peer-bench: error: ${err.message}\n`);
		usage(process.stderr);
		process.exit(2);
	}
	const o = parsed.values;
	if (o.h) {
		usage(process.stdout);
		process.exit(0);
	}
	if (!o.m) {
		usage(process.stderr);
		process.exit(2);
	}
	const fa = o.fa ?? "auto";
	if (!["on", "off", "auto"].includes(fa))
		die(`--fa needs on, off or auto, got '${fa}'`);
	return {
		model: o.m,
		threads: intArg(o, "t", 0, 0),
		nPp: intArg(o, "p", 512, 0),
		nTg: intArg(o, "n", 128, 0),
		reps: Math.max(1, intArg(o, "r", 5, 0)),
		fa: fa === "auto" ? "auto" : fa === "on",
		verbose: !!o.v,
	};
}

function pkgVersion(name) {
	try {
		const p = path.join(here, "node_modules", ...name.split("/"), "package.json");
		return JSON.parse(fs.readFileSync(p, "utf8")).version;
	} catch {
		return "?";
	}
}

/*
 * Collects llama.cpp's log lines so that llama_perf_context_print's output
 * can be read back.  The addon hands log lines to JS asynchronously, so a
 * reader waits until both timing lines of one print have arrived.
 */
class PerfLog {
	constructor(verbose) {
		this.lines = [];
		this.verbose = verbose;
	}

	sink(level, message) {
		if (message.includes("llama_perf_context_print")) {
			this.lines.push(message);
		} else if (level === "error" || level === "fatal" || (this.verbose && level === "warn")) {
			process.stderr.write(`[llama.cpp] ${message}\n`);
		}
	}

	/* Resolves to {pp: {ms, n}, tg: {ms, n}} of the next complete print, or null. */
	async take(timeoutMs = 3000) {
		const deadline = Date.now() + timeoutMs;
		const ppRe = /prompt eval time =\s*([\d.]+) ms \/\s*(\d+) tokens/;
		const tgRe = /:\s+eval time =\s*([\d.]+) ms \/\s*(\d+) runs/;

		for (;;) {
			const pp = this.lines.map((l) => l.match(ppRe)).find(Boolean);
			const tg = this.lines.map((l) => l.match(tgRe)).find(Boolean);
			if (pp && tg) {
				this.lines = [];
				return {
					pp: { ms: Number(pp[1]), n: Number(pp[2]) },
					tg: { ms: Number(tg[1]), n: Number(tg[2]) },
				};
			}
			if (Date.now() > deadline)
				return null;
			await new Promise((res) => setTimeout(res, 1));
		}
	}
}

/* Deterministic token ids (LCG), so every run and round feeds the same tokens. */
function randomTokens(count, nVocab, seed) {
	const out = new Uint32Array(count);
	let s = seed >>> 0;

	for (let i = 0; i < count; i++) {
		s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
		out[i] = s % nVocab;
	}
	return out;
}

function vocabSize(model) {
	const md = model.fileInfo?.metadata;
	const arch = md?.general?.architecture;
	const n = md?.tokenizer?.ggml?.tokens?.length ?? (arch ? md?.[arch]?.vocab_size : undefined);

	if (!Number.isInteger(n) || n <= 0)
		die("cannot find the vocabulary size in the model's metadata (tokenizer.ggml.tokens)");
	return n;
}

/*
 * One pp (nPp > 0) or tg run into an emptied sequence 0.  Returns
 * {native, wall}: tokens per second by llama.cpp's decode timer and by the JS
 * clock around the whole loop.
 */
async function runOnce(ctx, perf, tokens, nPp, nTg) {
	const last = new Uint32Array([nPp ? nPp - 1 : 0]);
	const one = new Uint32Array([0]);
	const steps = [];

	for (let i = 0; i < nTg; i++)
		steps.push(tokens.subarray(i, i + 1));
	if (!ctx.removeTokenCellsFromSequence(0, -1, -1))
		throw new Error("cannot clear the KV cache of sequence 0");
	ctx.printTimings(); /* prints and resets the counters */
	if (!(await perf.take()))
		throw new Error("llama.cpp's timing report did not arrive");

	const t0 = process.hrtime.bigint();
	if (nPp) {
		ctx.initBatch(nPp);
		ctx.addToBatch(0, 0, tokens.subarray(0, nPp), last);
		await ctx.decodeBatch();
	}
	for (let i = 0; i < nTg; i++) {
		ctx.initBatch(1);
		ctx.addToBatch(0, i, steps[i], one);
		await ctx.decodeBatch();
	}
	const secs = Number(process.hrtime.bigint() - t0) / 1e9;

	ctx.printTimings();
	const t = await perf.take();
	const n = nPp || nTg;
	const got = nPp ? t?.pp : t?.tg;
	/* llama.cpp counts a batch of n tokens as n prompt tokens, a 1-token batch as one run. */
	if (!got || got.n !== n || !(got.ms > 0))
		throw new Error(`llama.cpp's decode timer did not record the ${n} ${nPp ? "prompt tokens" : "runs"}` +
			(got ? ` (it has ${got.n} in ${got.ms} ms)` : ""));
	return { native: n / (got.ms / 1e3), wall: n / secs };
}

function median(sorted) {
	return sorted[Math.floor(sorted.length / 2)];
}

async function benchTest(ctx, perf, tokens, name, nPp, nTg, reps, threads) {
	const native = [], wall = [];
	const tty = process.stderr.isTTY;

	await runOnce(ctx, perf, tokens, nPp, nTg); /* warm-up: page in weights, build graphs */
	for (let r = 0; r < reps; r++) {
		const s = await runOnce(ctx, perf, tokens, nPp, nTg);
		native.push(s.native);
		wall.push(s.wall);
		if (tty)
			process.stderr.write(`\r${name}: run ${r + 1}/${reps}: ${s.native.toFixed(1)} tok/s   `);
	}
	if (tty)
		process.stderr.write(`\r${" ".repeat(60)}\r`);
	native.sort((a, b) => a - b);
	wall.sort((a, b) => a - b);
	const f = (x, w) => x.toFixed(1).padStart(w);
	console.log(`| ${name.padEnd(8)} | ${String(threads).padStart(7)} | ${f(median(native), 12)} | ` +
		`${f(native[0], 10)} | ${f(native[reps - 1], 10)} | ${f(median(wall), 12)} |`);
}

async function main() {
	const opt = parseCli();
	if (!fs.existsSync(opt.model))
		die(`cannot open model ${opt.model}: no such file`);

	let lib;
	try {
		lib = await import("node-llama-cpp");
	} catch (err) {
		die(`node-llama-cpp is not installed in ${here} (run: npm ci --omit=optional --ignore-scripts): ${err.message}`);
	}
	const perf = new PerfLog(opt.verbose);
	const llama = await lib.getLlama({
		gpu: false,
		build: "never",
		usePrebuiltBinaries: true,
		skipDownload: true,
		progressLogs: false,
		logLevel: lib.LlamaLogLevel.info,
		logger: (level, msg) => perf.sink(level, msg),
	});
	const bindings = llama._bindings;
	if (typeof bindings?.AddonContext !== "function")
		die(`node-llama-cpp ${pkgVersion("node-llama-cpp")} no longer exposes its native AddonContext; pin 3.21.1`);

	const threads = opt.threads || (await import("node:os")).availableParallelism();
	const model = await llama.loadModel({ modelPath: opt.model, gpuLayers: 0 });
	const nVocab = vocabSize(model);
	const rel = llama.llamaCppRelease;

	console.log(`peer: llama.cpp ${rel.release} (${rel.repo}), ${llama.buildType} CPU binary ` +
		`@node-llama-cpp/linux-x64 ${pkgVersion("@node-llama-cpp/linux-x64")}, ` +
		`node-llama-cpp ${pkgVersion("node-llama-cpp")}, node ${process.version}`);
	console.log(`peer: ${llama.systemInfo.trim()}`);
	console.log(`model ${opt.model}: ${model.typeDescription}, ${(model.size / 1048576).toFixed(1)} MiB; ` +
		`flash attention ${opt.fa === "auto" ? "auto" : opt.fa ? "on" : "off"}`);

	/* A context sized like llama-bench's (n_prompt + n_gen); n_ubatch = n_batch = N_PROMPT here. */
	const ctx = new bindings.AddonContext(model._model, {
		contextSize: Math.max(opt.nPp + opt.nTg, 1),
		batchSize: Math.max(opt.nPp, 1),
		sequences: 1,
		threads,
		flashAttention: opt.fa,
		performanceTracking: true,
	});
	if (!(await ctx.init()))
		die("llama.cpp could not create the context");
	if (ctx.getThreads() !== threads)
		die(`llama.cpp runs ${ctx.getThreads()} threads, not the ${threads} asked for`);

	const tokens = randomTokens(Math.max(opt.nPp, opt.nTg) + 1, nVocab, 1234);
	console.log(`| ${"test".padEnd(8)} | threads | tok/s median |        min |        max |  JS wall med |`);
	console.log("|----------|---------|--------------|------------|------------|--------------|");
	if (opt.nPp > 0)
		await benchTest(ctx, perf, tokens, `pp${opt.nPp}`, opt.nPp, 0, opt.reps, threads);
	if (opt.nTg > 0)
		await benchTest(ctx, perf, tokens, `tg${opt.nTg}`, 0, opt.nTg, opt.reps, threads);

	await ctx.dispose();
	await model.dispose();
	await llama.dispose();
}

main().then(
	() => process.exit(0),
	(err) => die(err?.message ?? String(err))
);
