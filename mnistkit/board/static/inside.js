// The Inside panel (#inside): the served network reading the answer's picture layer by layer, as forward() computes
// it, each picture tied to its line of mnist_forward.py or mnist_lenet5_forward.py. It opens from the answer
// (#inside-open); while it is open board.js sends the drawing to /board/inside, whose answer holds the layers of the
// same model run. With --compare the second model's answer (#compare-answer) and layers stand beside the first's.
// A unit's weights come from /board/inside/unit (hover, tap or focus); the test set's mistakes from /board/mistakes.
// board.js calls window.insidePanel: show(answer), language(code), model(model line), wanted(); and this file calls
// window.boardAgain() once, to have the answer shown asked again with its layers when the panel opens.
"use strict";
(() => {
const TEXT = {  // each of the panel's words: [English, 中文]
  open: ["See inside", "看看内部"],
  close: ["Hide inside", "收起内部"],
  title: ["Inside the network", "网络内部"],
  intro: ["What forward() computes between the 28x28 input x and the ten probabilities, for {what}.",
          "对{what}，forward() 在 28x28 输入 x 与十个概率之间算出的每一层。"],
  yourDrawing: ["your drawing", "你写的数字"],
  testDigit: ["test digit #{n}, shown beside the board", "画板旁显示的测试数字 #{n}"],
  recordTitle: ["Test digit #{n}: a {t}", "测试数字 #{n}：是 {t}"],
  likeThis: ["Draw one like this", "照着它写一个"],
  likeCaption: ["Test digit #{n} (a {t}): draw one like it, then teach the network what it is.",
                "测试数字 #{n}（是 {t}）：照着写一个，再告诉网络它是几。"],
  hideLike: ["Put it away", "收起"],
  changed: ["{n} cells changed since the last count (marked): {was}", "与上次统计相比有 {n} 个格子变了（已标出）：{was}"],
  was: ["was {c}", "原为 {c}"],
  dense: ["{n} units, each a ReLU of a weighted sum of {from}; the brighter, the larger its activation.",
          "{n} 个单元，每个是 {from} 加权和的 ReLU；越亮，激活值越大。"],
  conv: ["{n} feature maps of {h}x{w}: each a 5x5 filter slid over {from}, plus a bias, then ReLU.",
         "{n} 张 {h}x{w} 的特征图：每张是一个 5x5 卷积核在 {from} 上滑动，加偏置，再经 ReLU。"],
  pool: ["{n} maps of {h}x{w}: each 2x2 square of {from} keeps its largest value (max-pool).",
         "{n} 张 {h}x{w} 的图：{from} 的每个 2x2 方块只留最大值（最大池化）。"],
  logits: ["The 10 logits, before softmax: softmax(y) gives the probabilities. Pick a digit to see what pushed it.",
           "10 个 logits（softmax 之前）：softmax(y) 得到概率。选一个数字，看是什么推动了它。"],
  x: ["the input x", "输入 x"],
  pushes: ["The units that pushed {d} most (activation × weight to {d}; share of all positive pushes)",
           "最推动 {d} 的单元（激活值 × 到 {d} 的权重；占全部正向推动的比例）"],
  pushSum: ["These {k} give {s} of all the positive push to {d}.", "这 {k} 个单元占推向 {d} 的全部正向推动的 {s}。"],
  noPush: ["No unit pushed {d} up.", "没有单元把 {d} 往上推。"],
  unit: ["{layer} unit {u}", "{layer} 第 {u} 个单元"],
  map: ["{layer} map {u}", "{layer} 第 {u} 张图"],
  activation: ["activation {v}", "激活值 {v}"],
  incoming: ["Its weights from {from}", "它来自 {from} 的权重"],
  filter: ["Its 5x5 filter over each map of {from}", "它在 {from} 每张图上的 5x5 卷积核"],
  outgoing: ["Its weights to {to}", "它到 {to} 的权重"],
  evidence: ["x × its weights: what this picture gives it, pixel by pixel (sum {s}, before its bias b1)",
             "x × 它的权重：这张图逐像素给它的输入（总和 {s}，未加偏置 b1）"],
  colours: ["red: positive, blue: negative; strongest ±{m}", "红：正，蓝：负；最强 ±{m}"],
  refused: ["No layers to show: {}", "没有可显示的层：{}"],
  unitFailed: ["Cannot show its weights: {}", "无法显示它的权重：{}"],
  hint: ["Hover, tap or focus a unit.", "把鼠标移到单元上、点一下或用键盘选中。"],
  beside: ["Beside it: {net} · global_step {step} · {form}", "旁边：{net} · 训练步数 global_step {step} · {form}"],
  netTitle: ["{net} · global_step {step} · {form}", "{net} · 训练步数 global_step {step} · {form}"],
  mapMax: ["{map}: max {v}", "{map}：最大值 {v}"],
  reads: ["{net} reads {d} ({p})", "{net} 识别为 {d}（{p}）"],
  agree: ["Both networks read {d}.", "两个网络都识别为 {d}。"],
  disagree: ["The networks disagree: {a} reads {da}, {b} reads {db}.", "两个网络意见不同：{a} 识别为 {da}，{b} 识别为 {db}。"],
  notDigit: ["{net}: that is not a digit, or not like any it was shown: it lies far from every test digit it knows.",
             "{net}：这不是数字，至少不像它见过的任何数字：它离它认识的所有测试数字都很远。"],
  teachFirst: ["The digit buttons keep the picture for both networks; choose which one learns under Kept digits.",
               "数字按钮保存的图片两个网络共用；在“保存的数字”下面选择让哪个网络学习。"],
  mistakes: ["The test set's mistakes", "测试集上的错误"],
  mistakesOf: ["Of {net}", "{net} 的"],
  reading: ["Reading the test records…", "正在读取测试记录…"],
  scoring: ["Scoring {done} of {total} test digits…", "已评分 {done} / {total} 个测试数字…"],
  matrix: ["{right} of {total} test digits read right ({p}). Rows: the true digit; columns: the digit read. A cell opens its digits.",
           "{total} 个测试数字中识别正确 {right} 个（{p}）。行：真实数字；列：识别结果。点一个格子看其中的数字。"],
  cell: ["Test digits that are {t}, read as {r}: {count}", "是 {t} 却识别为 {r} 的测试数字：{count} 个"],
  cellMore: ["; the first {k} shown", "；显示前 {k} 个"],
  record: ["Test digit #{n}: a {t}, read as {r}. Test digits are the evaluation set: they are never kept.",
           "测试数字 #{n}：是 {t}，识别为 {r}。测试数字是评估集，从不保存。"],
  back: ["Back to my drawing", "回到我写的数字"],
  noMistakes: ["No mistakes to show: {}", "无法显示错误：{}"],
  truth: ["true", "真实"],
  read: ["read", "识别"],
};
const POLL_MS = 500;       // how often GET /board/mistakes is asked while the test set is scored
const HOVER_MS = 120;      // a unit hovered this long shows its weights
const MAP_PIXELS = 3;      // a map's size on the page: its pixels times this (at most 56 px), a filter's times 8
const MOST_PICTURES = 64;  // a unit's weights drawn as at most this many pictures (conv2's to fc1: 512 of 7x7)
let language = "en";
const T = new Proxy(TEXT, {get: (text, key) => text[key][language === "zh" ? 1 : 0]});  // T.open: in the language
let open = false;          // whether the panel is open (and drawings go to /board/inside)
let line = null;           // /board/model's answer
let drawing = null;        // the last answer to a drawing or photo
let record = null;         // the test digit shown instead of it: {number, label, answer}, or null
let mistakesSlot = "first";
const counted = {first: null, compare: null};  // the last matrix counted in each slot: {key (model), matrix}
let mistakesPoll = null;
let hover = null;
const weights = new Map();  // "slot source layer unit" -> the unit's answer (or its refusal)
const pushDigit = {first: null, compare: null};  // the digit whose pushes are shown; null: the answer's
const toggle = document.getElementById("inside-open");
const panel = document.getElementById("inside");
const compareBox = document.getElementById("compare-answer");

// The board's routes answer an error with its Chinese twin ("zh") beside its line when asked (TWINS, as board.js)
const TWINS = {headers: {"Accept-Language": "en, zh"}};
const errorLine = found => (language === "zh" && found.zh) || found.error;  // a refusal's line in the page's language

function say(key, values = {}) {
  return T[key].replace(/\{(\w+)\}/g, (found, name) => (name in values ? String(values[name]) : found));
}
const percent = p => (100 * p).toFixed(1) + "%";
const fixed = v => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3));
function element(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== undefined) made.textContent = text;
  return made;
}

// ---------------------------------------------------------------- pictures

function bytes(data) {  // base64 -> Uint8Array
  const text = atob(data);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

function values(maps, k, data) {  // map k of a "maps" entry as floats (its 8-bit values through its own min and max)
  const size = maps.height * maps.width, low = maps.min[k], high = maps.max[k];
  return Array.from(data.subarray(k * size, (k + 1) * size), b => low + b / 255 * (high - low));
}

function paintGray(canvas, data, offset, width, height) {  // 8-bit values as gray: bright is large
  const image = canvas.getContext("2d").createImageData(width, height);
  for (let i = 0; i < width * height; i++) {
    const v = data[offset + i];
    image.data.set([v, v, v, 255], 4 * i);
  }
  canvas.getContext("2d").putImageData(image, 0, 0);
}

function paintSigned(canvas, floats, strongest) {  // weights: white at 0, red positive, blue negative
  const image = canvas.getContext("2d").createImageData(canvas.width, canvas.height);
  floats.forEach((v, i) => {
    const t = strongest > 0 ? Math.min(1, Math.abs(v) / strongest) : 0, faded = Math.round(255 * (1 - t));
    image.data.set(v >= 0 ? [255, faded, faded, 255] : [faded, faded, 255, 255], 4 * i);
  });
  canvas.getContext("2d").putImageData(image, 0, 0);
}

function columnsFor(count) {  // a grid's columns: a divisor of count near its square root (500: 25, 512: 32)
  let columns = Math.ceil(Math.sqrt(count));
  while (count % columns && columns < 2 * Math.sqrt(count)) columns++;
  return count % columns ? Math.ceil(Math.sqrt(count)) : columns;
}

// ---------------------------------------------------------------- one network's layers

function layerBefore(layers, at) {  // what a layer is computed from, as its caption says it
  return at === 0 ? T.x : layers[at - 1].name;
}

function caption(layer, layers, at) {
  const [h, w, n] = layer.shape.length === 3 ? layer.shape : [0, 0, layer.shape[0]];
  const what = say(layer.kind, {n, h, w, from: layerBefore(layers, at)});
  const figcaption = element("figcaption");
  const code = element("code", "line", layer.line || layer.name);
  figcaption.append(code, " ", element("span", "at", layer.at), element("span", "what", what));
  return figcaption;
}

function unitButton(slot, layer, unit, className) {
  const button = element("button", className);
  button.type = "button";
  button.dataset.slot = slot;
  button.dataset.layer = layer;
  button.dataset.unit = String(unit);
  button.tabIndex = unit === 0 ? 0 : -1;  // one stop per layer: the arrow keys move within it
  return button;
}

function buildNet(column, slot, look) {  // the figures of one network's layers (made again when its layers change)
  column.replaceChildren();
  column.dataset.network = look.model.network;
  column.append(element("h3", "net-title"), element("p", "refused"));
  column.querySelector(".refused").hidden = true;
  (look.layers || []).forEach((layer, at) => {
    const figure = element("figure", "layer");
    figure.dataset.layer = layer.name;
    figure.dataset.kind = layer.kind;
    figure.append(caption(layer, look.layers, at));
    const units = element("div", layer.maps ? "maps" : layer.kind === "logits" ? "logits" : "units");
    const count = layer.shape[layer.shape.length - 1];
    if (!layer.maps && layer.kind !== "logits") units.style.gridTemplateColumns = `repeat(${columnsFor(count)}, 1fr)`;
    for (let u = 0; u < count; u++) {
      const button = unitButton(slot, layer.name, u, layer.maps ? "map" : layer.kind === "logits" ? "logit" : "unit");
      if (layer.maps) {
        const canvas = element("canvas");
        canvas.width = layer.shape[1];
        canvas.height = layer.shape[0];
        canvas.style.width = canvas.style.height = Math.min(56, MAP_PIXELS * layer.shape[0]) + "px";
        button.append(canvas);
      } else if (layer.kind === "logits") {
        button.append(element("span", "digit", String(u)), element("span", "bar"), element("span", "value"),
                      element("span", "probability"));
      }
      units.append(button);
    }
    figure.append(units);
    column.append(figure);
  });
  const pushes = element("div", "pushes");
  pushes.append(element("p", "push-title"), element("ol"), element("p", "push-sum"));
  pushes.hidden = true;
  column.append(pushes, element("div", "detail", T.hint));
  column.querySelector(".detail").setAttribute("aria-live", "polite");
}

function formName(form) {  // a model's form (checkpoint, SavedModel, LiteRT) as board.js's model line says it
  return window.boardFormName ? window.boardFormName(form) : form;
}

function showNet(column, slot, look) {  // one network's answer: its layers drawn, its pushes, its title
  const shape = look.layers ? look.layers.map(l => l.name + l.shape.join("x")).join() : "";
  if (column.dataset.shape !== shape || column.dataset.network !== look.model.network) {
    buildNet(column, slot, look);
    column.dataset.shape = shape;
  }
  column.querySelector(".net-title").textContent =
    say("netTitle", {net: look.model.network, step: look.model.global_step ?? "?", form: formName(look.model.form)});
  const refused = column.querySelector(".refused");
  refused.hidden = !look.refused;
  refused.textContent = look.refused ? say("refused").replace("{}", errorLine({error: look.refused,
                                                                                zh: look.refused_zh})) : "";
  for (const layer of look.layers || []) {
    const figure = column.querySelector(`figure[data-layer="${layer.name}"]`);
    if (layer.maps) showMaps(figure, layer.maps);
    else if (layer.kind === "logits") showLogits(figure, layer.values, look.probabilities);
    else showUnits(figure, layer.values);
  }
  showPushes(column, slot, look);
}

function showMaps(figure, maps) {  // each map its own scale: the brightest pixel is its max
  const data = bytes(maps.data), size = maps.height * maps.width;
  figure.querySelectorAll("button.map").forEach((button, k) => {
    paintGray(button.firstChild, data, k * size, maps.width, maps.height);
    button.dataset.max = String(maps.max[k]);
    button.setAttribute("aria-label", say("mapMax", {map: say("map", {layer: figure.dataset.layer, u: k}),
                                                     v: fixed(maps.max[k])}));
  });
}

function showUnits(figure, activations) {  // brightness: the activation over the layer's largest
  const largest = Math.max(...activations, 1e-12);
  figure.querySelectorAll("button.unit").forEach((button, u) => {
    const g = Math.round(255 * Math.max(0, activations[u]) / largest);
    button.style.backgroundColor = `rgb(${g}, ${g}, ${g})`;
    button.dataset.value = String(activations[u]);
    button.setAttribute("aria-label", `${say("unit", {layer: figure.dataset.layer, u})}: ${fixed(activations[u])}`);
  });
}

function showLogits(figure, logits, probabilities) {
  const largest = Math.max(...logits.map(Math.abs), 1e-12);
  const top = logits.indexOf(Math.max(...logits));
  figure.querySelectorAll("button.logit").forEach((button, d) => {
    const bar = button.querySelector(".bar");
    bar.style.width = (50 * Math.abs(logits[d]) / largest).toFixed(1) + "%";
    bar.classList.toggle("negative", logits[d] < 0);
    button.querySelector(".value").textContent = logits[d].toFixed(2);
    button.querySelector(".probability").textContent = percent(probabilities[d]);
    button.classList.toggle("top", d === top);
    button.dataset.value = String(logits[d]);
    button.setAttribute("aria-label", `y[${d}] = ${logits[d].toFixed(2)}, ${percent(probabilities[d])}`);
  });
}

function showPushes(column, slot, look) {  // the units that pushed the chosen digit's logit most, marked in their grid
  const box = column.querySelector(".pushes");
  box.hidden = !look.pushes;
  column.querySelectorAll("button.pushed").forEach(b => b.classList.remove("pushed"));
  if (!look.pushes) return;
  const digit = pushDigit[slot] ?? look.digit;
  const found = look.pushes.digits[digit];
  box.dataset.digit = String(digit);
  box.querySelector(".push-title").textContent = say("pushes", {d: digit});
  const list = box.querySelector("ol");
  list.replaceChildren();
  let shares = 0;
  found.units.forEach((u, i) => {
    const share = found.positive > 0 ? found.pushes[i] / found.positive : 0;
    shares += share;
    const item = element("li");
    const button = element("button", "push", `${look.pushes.layer}[${u}]  ${fixed(found.pushes[i])}  ${percent(share)}`);
    button.type = "button";
    Object.assign(button.dataset, {slot, pushUnit: String(u), push: String(found.pushes[i]), share: String(share)});
    item.append(button);
    list.append(item);
    const unit = column.querySelector(`button.unit[data-layer="${look.pushes.layer}"][data-unit="${u}"]`);
    if (unit) unit.classList.add("pushed");
  });
  box.querySelector(".push-sum").textContent = found.units.length ?
    say("pushSum", {k: found.units.length, s: percent(shares), d: digit}) : say("noPush", {d: digit});
  box.querySelector(".push-sum").dataset.sum = String(shares);
  column.querySelectorAll("button.logit").forEach((b, d) => b.classList.toggle("chosen", d === digit));
}

// ---------------------------------------------------------------- a unit's weights

async function unitWeights(slot, layer, unit) {
  const look = shownLooks()[slot === "compare" ? 1 : 0];
  const key = [slot, look && look.model.source, layer, unit].join(" ");
  if (!weights.has(key)) {
    const query = `layer=${encodeURIComponent(layer)}&unit=${unit}` + (slot === "compare" ? "&model=compare" : "");
    weights.set(key, fetch("/board/inside/unit?" + query, TWINS).then(async r => {
      const body = await r.json().catch(() => ({error: `HTTP ${r.status}`}));
      if (!r.ok) weights.delete(key);
      return body;
    }, () => { weights.delete(key); return {error: "offline"}; }));
  }
  return weights.get(key);
}

function weightsFigure(part, title, columns) {  // maps (one picture per map) or numbers (bars, or a grid of many)
  const figure = element("figure", "weights");
  const strongest = Math.max(Math.abs(part.min[0] ?? part.min), Math.abs(part.max[0] ?? part.max));
  figure.dataset.strongest = String(strongest);
  if (part.data) {
    const data = bytes(part.data), pictures = element("div", "pictures");
    if (part.count > MOST_PICTURES) title += ` (${MOST_PICTURES} / ${part.count})`;
    for (let k = 0; k < Math.min(part.count, MOST_PICTURES); k++) {
      const canvas = element("canvas");
      canvas.width = part.width;
      canvas.height = part.height;
      canvas.style.width = canvas.style.height = (part.height >= 28 ? 112 : part.height * 8) + "px";
      paintSigned(canvas, values(part, k, data), strongest);
      pictures.append(canvas);
    }
    figure.append(pictures);
  } else if (part.values.length > 16) {  // many numbers: a picture of them in their layer's grid
    const canvas = element("canvas");
    canvas.width = columns || columnsFor(part.values.length);
    canvas.height = Math.ceil(part.values.length / canvas.width);
    canvas.style.width = 5 * canvas.width + "px";
    paintSigned(canvas, part.values, strongest);
    figure.append(canvas);
  } else {
    const bars = element("ol", "numbers");
    part.values.forEach((v, i) => {
      const item = element("li");
      const bar = element("span", v < 0 ? "bar negative" : "bar");
      bar.style.width = (50 * Math.abs(v) / (strongest || 1)).toFixed(1) + "%";
      item.append(element("span", "index", String(i)), bar, element("span", "value", fixed(v)));
      bars.append(item);
    });
    figure.append(bars);
  }
  figure.append(element("figcaption", "", `${title} · ${say("colours", {m: fixed(strongest)})}`));
  return figure;
}

async function showUnit(button) {  // the detail box of the unit's network: its incoming and outgoing weights
  const column = button.closest(".net");
  const slot = column.dataset.slot, look = shownLooks()[slot === "compare" ? 1 : 0];
  if (!look || !look.layers) return;
  const at = look.layers.findIndex(l => l.name === button.dataset.layer);
  let layer = look.layers[at], asked = layer, unit = Number(button.dataset.unit);
  if (layer.kind === "pool") asked = look.layers[at - 1];  // a pooled map shows the filter of the conv it pools
  const detail = column.querySelector(".detail");
  detail.dataset.layer = asked.name;
  detail.dataset.unit = String(unit);
  const answer = await unitWeights(slot, asked.name, unit);
  if (detail.dataset.layer !== asked.name || detail.dataset.unit !== String(unit)) return;  // another was asked since
  detail.replaceChildren();
  const kind = layer.maps ? "map" : "unit";
  detail.append(element("h4", "", say(kind, {layer: layer.name, u: unit}) +
    (button.dataset.value ? ` · ${say("activation", {v: fixed(Number(button.dataset.value))})}` : "")));
  if (answer.error) {
    detail.append(element("p", "refused", say("unitFailed").replace("{}", errorLine(answer))));
    return;
  }
  const from = layerBefore(look.layers, look.layers.indexOf(asked));
  const before = look.layers[look.layers.indexOf(asked) - 1];
  const columns = before && before.shape.length === 1 ? columnsFor(before.shape[0]) : undefined;
  const incoming = weightsFigure(answer.incoming, say(asked.kind === "conv" ? "filter" : "incoming", {from}), columns);
  incoming.classList.add("incoming");
  detail.append(incoming);
  const input = shownLooks()[0].input;
  if (asked.kind === "dense" && !before && input) detail.append(evidence(answer.incoming, input));
  if (answer.outgoing) detail.append(weightsFigure(answer.outgoing, say("outgoing", {to: answer.to})));
  detail.dataset.shown = `${asked.name} ${unit}`;
}

function evidence(incoming, input) {  // x times a first-layer unit's weights: what this picture gives the unit
  const weights = values(incoming, 0, bytes(incoming.data));
  const product = weights.map((w, i) => w * input[i] / 255);
  const strongest = Math.max(...product.map(Math.abs));
  const figure = element("figure", "weights evidence");
  const canvas = element("canvas");
  canvas.width = canvas.height = 28;
  canvas.style.width = canvas.style.height = "112px";
  paintSigned(canvas, product, strongest);
  const sum = product.reduce((a, b) => a + b, 0);
  figure.append(canvas, element("figcaption", "", say("evidence", {s: fixed(sum)}) + " · " +
                                say("colours", {m: fixed(strongest)})));
  return figure;
}

function unitEvent(event) {
  return event.target.closest("button.unit, button.map, button.logit, button.push");
}

function showPushed(button) {  // a unit of the pushes list: the same as its unit in the grid
  const column = button.closest(".net");
  const unit = column.querySelector(`button.unit[data-unit="${button.dataset.pushUnit}"]`);
  if (unit) showUnit(unit);
}

panel.addEventListener("click", event => {
  const button = unitEvent(event);
  if (!button) return;
  if (button.classList.contains("push")) return showPushed(button);
  if (button.classList.contains("logit")) {  // a logit picks the digit whose pushes are shown
    const slot = button.closest(".net").dataset.slot;
    pushDigit[slot] = Number(button.dataset.unit);
    const looks = shownLooks();
    showPushes(button.closest(".net"), slot, looks[slot === "compare" ? 1 : 0]);
  }
  showUnit(button);
});
panel.addEventListener("focusin", event => {
  const button = unitEvent(event);
  if (button && !button.classList.contains("push")) showUnit(button);
  else if (button) showPushed(button);
});
panel.addEventListener("pointerover", event => {
  const button = unitEvent(event);
  clearTimeout(hover);
  if (button && event.pointerType === "mouse") {
    hover = setTimeout(() => (button.classList.contains("push") ? showPushed(button) : showUnit(button)), HOVER_MS);
  }
});
panel.addEventListener("keydown", event => {  // the arrow keys move within a layer's units (one tab stop each)
  const button = unitEvent(event);
  if (!button || button.classList.contains("push")) return;
  const siblings = Array.from(button.parentElement.children);
  const at = siblings.indexOf(button);
  const style = getComputedStyle(button.parentElement);
  const columns = style.display === "grid" ? style.gridTemplateColumns.split(" ").length :
    Math.max(1, Math.round(button.parentElement.clientWidth / Math.max(1, button.offsetWidth)));
  const step = {ArrowRight: 1, ArrowLeft: -1, ArrowDown: columns, ArrowUp: -columns, Home: -at,
                End: siblings.length - 1 - at}[event.key];
  if (step === undefined) return;
  event.preventDefault();
  const next = siblings[Math.min(siblings.length - 1, Math.max(0, at + step))];
  button.tabIndex = -1;
  next.tabIndex = 0;
  next.focus();
});

// ---------------------------------------------------------------- both networks, side by side

function shownLooks() {  // [the first model's answer, the compare model's or null] now in the panel
  const answer = record ? record.answer : drawing;
  return answer ? [answer, answer.compare || null] : [null, null];
}

function column(slot) {
  let found = panel.querySelector(`.net[data-slot="${slot}"]`);
  if (!found) {
    found = element("div", "net");
    found.dataset.slot = slot;
    panel.querySelector(".nets").append(found);
  }
  return found;
}

function showPanel() {
  const [first, second] = shownLooks();
  const banner = panel.querySelector(".record");
  banner.hidden = !record;
  if (record) {
    const opened = record.answer.opened_from === "compare" && record.answer.compare ? record.answer.compare :
      record.answer;  // read as the matrix it was opened from says
    banner.querySelector("p").textContent = say("record", {n: record.number, t: record.label, r: opened.digit});
  }
  panel.querySelector(".intro").textContent = say("intro", {what: record ? say("testDigit", {n: record.number}) :
                                                                           T.yourDrawing});
  showRecordAnswer();
  for (const [slot, look] of [["first", first], ["compare", second]]) {
    const found = column(slot);
    found.hidden = !(look && (look.layers || look.refused));
    if (!found.hidden) showNet(found, slot, look);
  }
  panel.dataset.shown = first && first.layers ? String(first.digit) : "";
}

function showCompare(answer) {  // #compare-answer: the second model's digit, and whether the two agree
  const second = line && line.compare;
  compareBox.hidden = !second;
  if (!second) return;
  compareBox.replaceChildren();
  compareBox.append(element("p", "beside", say("beside", {net: second.network, step: second.global_step ?? "?",
                                                           form: formName(second.form)})));
  const other = answer && answer.compare;
  compareBox.classList.toggle("disagree", Boolean(other && other.digit !== answer.digit));
  compareBox.dataset.agree = other ? String(other.digit === answer.digit) : "";
  if (other) {
    const read = element("p", "reads", say("reads", {net: other.model.network, d: other.digit,
                                                      p: percent(other.probabilities[other.digit])}));
    read.dataset.digit = String(other.digit);
    compareBox.append(read, element("p", "verdict", other.digit === answer.digit ? say("agree", {d: answer.digit}) :
      say("disagree", {a: answer.model.network, da: answer.digit, b: other.model.network, db: other.digit})));
    // its own "not a digit", judged by its own map of the test digits (null while that map is made: nothing said)
    if (other.not_a_digit === true) {
      compareBox.append(element("p", "not-a-digit", say("notDigit", {net: other.model.network})));
    }
  }
  compareBox.dataset.notADigit = other ? String(other.not_a_digit) : "";
  compareBox.append(element("p", "teach-first", say("teachFirst", {net: (line && line.network) || ""})));
}

// ---------------------------------------------------------------- the test set's mistakes

async function askMistakes(query = "") {
  const slot = mistakesSlot === "compare" ? "model=compare" : "";
  const url = "/board/mistakes" + (query || slot ? "?" + [query, slot].filter(Boolean).join("&") : "");
  try {
    const response = await fetch(url, TWINS);
    const body = await response.json().catch(() => ({error: `HTTP ${response.status}`}));
    return response.ok ? body : {error: body.error || `HTTP ${response.status}`, zh: body.zh};
  } catch (e) {
    return {error: "offline"};
  }
}

async function loadMistakes() {  // the scoring's state, polled while it runs, then its grid
  clearTimeout(mistakesPoll);
  const view = panel.querySelector(".mistakes-view");
  const state = await askMistakes();
  const progress = panel.querySelector(".mistakes-progress");
  if (state.error) {
    progress.textContent = say("noMistakes").replace("{}", errorLine(state));
    return;
  }
  progress.dataset.state = state.state;
  if (state.state === "running") {
    progress.textContent = state.stage === "reading" ? T.reading : say("scoring", {done: state.done, total: state.total});
    mistakesPoll = setTimeout(loadMistakes, POLL_MS);
    return;
  }
  progress.textContent = say("matrix", {right: state.right, total: state.total, p: percent(state.right / state.total)});
  // A new model in the slot (a learn promoted, a newer checkpoint): its matrix beside the last one counted, the
  // cells that changed marked.
  const key = `${state.model.source} ${state.model.version}`, before = counted[mistakesSlot];
  const table = matrixTable(state.matrix, before && before.key !== key ? before.matrix : null);
  counted[mistakesSlot] = {key, matrix: state.matrix};
  const changes = table.querySelectorAll("td.changed");
  const note = element("p", "changes", changes.length ? say("changed", {n: changes.length, was: Array.from(changes,
    td => `${td.dataset.truth}→${td.dataset.read} ${say("was", {c: td.dataset.before})}`).join(", ")}) : "");
  view.replaceChildren(table, note, element("div", "cell"));
}

function matrixTable(matrix, before) {  // before: the last matrix counted of another model, or null
  const table = element("table", "matrix");
  const head = element("tr");
  head.append(element("th", "", `${T.truth} \\ ${T.read}`));
  for (let r = 0; r < 10; r++) head.append(element("th", "", String(r)));
  table.append(head);
  matrix.forEach((row, t) => {
    const tr = element("tr");
    tr.append(element("th", "", String(t)));
    row.forEach((count, r) => {
      const td = element("td", t === r ? "right" : count ? "wrong" : "");
      Object.assign(td.dataset, {truth: String(t), read: String(r)});
      if (before && before[t][r] !== count) {
        td.classList.add("changed");
        td.dataset.before = String(before[t][r]);
        td.title = say("was", {c: before[t][r]});
      }
      if (t !== r && count) {
        const button = element("button", "", String(count));
        button.type = "button";
        Object.assign(button.dataset, {digit: String(t), read: String(r)});
        td.append(button);
      } else {
        td.textContent = String(count);
      }
      tr.append(td);
    });
    table.append(tr);
  });
  return table;
}

async function openCell(button) {  // a cell's misread test digits, each a button that shows its inside
  const cell = panel.querySelector(".mistakes-view .cell");
  const found = await askMistakes(`digit=${button.dataset.digit}&read=${button.dataset.read}`);
  if (found.error) {
    cell.replaceChildren(element("p", "refused", say("noMistakes").replace("{}", errorLine(found))));
    return;
  }
  const title = say("cell", {count: found.count, t: found.digit, r: found.read}) +
    (found.count > found.records.length ? say("cellMore", {k: found.records.length}) : "");
  const list = element("div", "tests");
  const data = bytes(found.inputs);
  found.records.forEach((number, i) => {
    const test = element("button", "test");
    test.type = "button";
    test.dataset.record = String(number);
    test.setAttribute("aria-label", `#${number}`);
    const canvas = element("canvas");
    canvas.width = canvas.height = 28;
    paintGray(canvas, data, i * 784, 28, 28);
    test.append(canvas);
    list.append(test);
  });
  cell.replaceChildren(element("p", "", title), list);
}

async function openRecord(button) {  // a test digit's inside, shown instead of the drawing's until "back"
  const found = await askMistakes(`record=${button.dataset.record}`);
  if (found.error) return;
  record = {number: found.record, label: found.label, answer: found};
  showPanel();
  recordBox.scrollIntoView({block: "nearest"});
}

// The opened test digit where the answer is (#record-answer, after #compare-answer): large, with each network's own
// answer, its inside below (the panel) and its reasons: when the Why view is there (window.whyPanel, why.js), it is
// shown the test digit as it is shown a drawing (whyPanel.show(answer, blob, name)), until "back".
const recordBox = element("div", "record-answer");
recordBox.id = "record-answer";
recordBox.hidden = true;
compareBox.after(recordBox);

function showRecordAnswer() {
  recordBox.hidden = !record;
  if (!record) return;
  const answer = record.answer, canvas = element("canvas", "large");
  canvas.width = canvas.height = 28;
  paintGray(canvas, Uint8Array.from(answer.input), 0, 28, 28);
  const lines = [answer, answer.compare].filter(Boolean).map(look => {
    const read = element("p", "reads", say("reads", {net: look.model.network, d: look.digit,
                                                      p: percent(look.probabilities[look.digit])}));
    read.dataset.digit = String(look.digit);
    read.classList.toggle("wrong", look.digit !== record.label);
    return read;
  });
  const like = element("button", "like-this", T.likeThis), back = element("button", "back", T.back);
  like.type = back.type = "button";
  like.addEventListener("click", () => showLikeThis(record));
  back.addEventListener("click", () => {
    record = null;
    showPanel();
    if (window.whyPanel) window.boardAgain();  // the drawing's reasons again
  });
  recordBox.dataset.record = String(record.number);
  recordBox.replaceChildren(element("h3", "", say("recordTitle", {n: record.number, t: record.label})), canvas,
                            ...lines, like, back);
  if (window.whyPanel && window.whyPanel.show) whyOf(record);
}

function whyOf(shown) {  // the Why view (why.js) told the test digit as a picture: dark ink on white, as drawn
  const canvas = element("canvas");
  canvas.width = canvas.height = 28;
  paintGray(canvas, Uint8Array.from(shown.answer.input, v => 255 - v), 0, 28, 28);
  canvas.toBlob(blob => {
    if (record === shown) window.whyPanel.show(shown.answer, blob, `test-digit-${shown.number}.png`);
  }, "image/png");
}

function showLikeThis(shown) {  // "Draw one like this": the test digit beside the board, until put away
  let figure = document.getElementById("like-this");
  if (!figure) {
    figure = element("figure", "like-this");
    figure.id = "like-this";
    document.getElementById("board").after(figure);
  }
  const canvas = element("canvas", "large");
  canvas.width = canvas.height = 28;
  paintGray(canvas, Uint8Array.from(shown.answer.input), 0, 28, 28);
  const away = element("button", "", T.hideLike);
  away.type = "button";
  away.addEventListener("click", () => figure.remove());
  figure.dataset.record = String(shown.number);
  figure.replaceChildren(canvas, element("figcaption", "", say("likeCaption", {n: shown.number, t: shown.label})),
                         away);
}

// ---------------------------------------------------------------- the panel, and board.js's hooks

function build() {
  panel.append(element("h2", "", ""), element("p", "intro"), element("div", "record"), element("div", "nets"));
  panel.querySelector("h2").id = "inside-title";
  const banner = panel.querySelector(".record");
  const back = element("button", "back");
  back.type = "button";
  back.addEventListener("click", () => { record = null; showPanel(); });
  banner.append(element("p"), back);
  banner.hidden = true;
  const mistakes = element("section", "mistakes");
  const opener = element("button", "mistakes-open");
  opener.type = "button";
  const slots = element("div", "mistakes-slots");
  slots.setAttribute("role", "group");
  mistakes.append(opener, slots, element("p", "mistakes-progress"), element("div", "mistakes-view"));
  mistakes.querySelector(".mistakes-progress").setAttribute("aria-live", "polite");
  panel.append(mistakes);
  opener.addEventListener("click", loadMistakes);
  slots.addEventListener("click", event => {
    const chosen = event.target.closest("[data-slot]");
    if (!chosen) return;
    mistakesSlot = chosen.dataset.slot;
    for (const b of slots.children) b.setAttribute("aria-pressed", String(b === chosen));
    panel.querySelector(".mistakes-view").replaceChildren();
    loadMistakes();
  });
  mistakes.addEventListener("click", event => {
    const cell = event.target.closest(".matrix button");
    if (cell) openCell(cell);
    const test = event.target.closest("button.test");
    if (test) openRecord(test);
  });
  toggle.addEventListener("click", () => {
    open = !open;
    panel.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    label();
    if (open && drawing && !drawing.layers && !drawing.refused) window.boardAgain();  // asked again, with its layers
    if (open) showPanel();
  });
}

function label() {  // the words of the panel's own elements, in the page's language
  toggle.textContent = open ? T.close : T.open;
  panel.querySelector("#inside-title").textContent = T.title;
  panel.querySelector(".intro").textContent = say("intro", {what: record ? say("testDigit", {n: record.number}) :
                                                                           T.yourDrawing});
  panel.querySelector(".record .back").textContent = T.back;
  panel.querySelector(".mistakes-open").textContent = T.mistakes;
  const slots = panel.querySelector(".mistakes-slots");
  slots.replaceChildren();
  slots.hidden = !(line && line.compare);
  for (const [slot, described] of [["first", line], ["compare", line && line.compare]]) {
    if (!described) continue;
    const button = element("button", "", say("mistakesOf", {net: described.network}));
    button.type = "button";
    button.dataset.slot = slot;
    button.setAttribute("aria-pressed", String(slot === mistakesSlot));
    slots.append(button);
  }
}

build();
window.insidePanel = {
  wanted: () => open,
  show(answer) {  // an answer to a drawing or photo (with its layers when the panel asked), or null for none
    drawing = answer;
    record = null;
    pushDigit.first = pushDigit.compare = null;
    toggle.hidden = false;
    showCompare(answer);
    if (open) showPanel();
  },
  language(code) {
    language = code;
    panel.querySelectorAll(".net").forEach(column => { column.dataset.shape = ""; });  // captions made again
    label();
    showCompare(drawing);
    if (open) showPanel();
  },
  model(described) {  // /board/model's answer: the first model, and the second under "compare"
    const before = line;
    line = described;
    const counting = panel.querySelector(".mistakes-progress").dataset.state;  // the matrix was asked for
    if (counting && before && described && (before.source !== described.source || before.version !==
                                             described.version)) loadMistakes();  // counted again after a learn
    label();
    showCompare(drawing);
  },
};
})();
