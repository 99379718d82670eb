// Cross-check helper for selfcheck.mjs: the UNMODIFIED EnergeticAI stack
// (@energetic-ai/core = tfjs 4.5.0 + WASM backend, as the package ships it)
// embeds every line of a sentences.jsonl, one embed() call per sentence.
// It runs in its own process: core bundles its own tfjs-core, whose global
// engine must not meet @tensorflow/tfjs' (lib.mjs) in one process.
// Usage: node core_embed.cjs <model-dir> <sentences.jsonl> <out.f32>
const fs = require('node:fs');
const path = require('node:path');
const core = require('@energetic-ai/core');
const { initModel } = require('@energetic-ai/embeddings');

(async () => {
  const [modelDir, sentencesPath, outPath] = process.argv.slice(2);
  const source = async () => ({
    model: await core.loadGraphModel(`file://${path.resolve(modelDir, 'model.json')}`),
    vocabulary: JSON.parse(fs.readFileSync(path.join(modelDir, 'vocab.json'), 'utf8')),
  });
  const em = await initModel(source);
  const texts = fs.readFileSync(sentencesPath, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l).text);
  const out = new Float32Array(texts.length * 512);
  const t0 = performance.now();
  const failed = [];
  for (let i = 0; i < texts.length; i++) {
    try {
      out.set(await em.embed(texts[i]), i * 512);
    } catch (e) {
      out.fill(NaN, i * 512, (i + 1) * 512);
      failed.push({ index: i, text: texts[i], error: String(e.message || e) });
    }
  }
  fs.writeFileSync(outPath, Buffer.from(out.buffer));
  console.log(JSON.stringify({ backend: core.getBackend(), version: core.version,
    seconds: (performance.now() - t0) / 1000, failed }));
})().catch((e) => { console.error(e); process.exit(1); });
