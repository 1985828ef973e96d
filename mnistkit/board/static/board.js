// The drawing board's page: strokes on #board are sent as a PNG to /board/predict when each one ends, and the
// answer (digit, ten probabilities, the 28x28 input after the app's own preparation) is shown. No library.
// After an answer, ten buttons (#teach) keep the picture under the digit it was (POST /board/keep); the kept digits
// are listed under the board (/board/kept, a page at a time, each picture once in view), and "Learn from my
// digits" (#learn) starts /board/learn and follows it: its stage and steps, then its check (the test records'
// accuracy and a digit's recall before and after, your digits read right), with undo and redo beside it, and "use it
// anyway" or "discard" for a learn held because a digit got worse. The page follows the model that answers and where
// the learns stand every FOLLOW_MS, whoever changed them (another page, mnist_learn.py in a terminal).
// The page speaks Chinese or English: the browser's language, until the switch (#lang) picks one, which is kept.
// The Inside panel is inside.js's (window.insidePanel): it is told each answer, the language and the model line, and
// while it is open the drawing goes to /board/inside, which answers the same and forward()'s layers in one run.
"use strict";

const TEXT = {
  en: {
    title: "MNIST drawing board", hint: "Draw one digit, or drop a photo of one on the page.",
    keys: "Keyboard: focus the board, Space puts the pen down or lifts it, arrows move it (Shift: small steps).",
    predict: "Predict", undo: "Undo", clear: "Clear", photo: "Photo:", reads: "The network reads",
    sees: "What the network sees: the 28x28 input after the app's preparation",
    board: "drawing board", input: "the network's 28x28 input", model: "Model",
    step: "global_step", unknownStep: "global_step unknown", refused: "Cannot read it: {}", empty: "Draw a digit first.",
    offline: "The server is not answering: is mnist_app.py --serve still running?",
    unreadable: "The server's answer cannot be read (HTTP {}): is mnist_app.py --serve still running?",
    probability: "probability of", language: "Language",
    unsure: "Maybe {} ({}) — or {}? Tell me which it was below.",
    teach: "That was a …", teachDigit: "That was {a}", kept: "Kept as {a}.", keepFailed: "Not kept: {}",
    keptTitle: "Kept digits", remove: "Remove kept digit {} ({})", removeFailed: "Not removed: {}",
    labelsUnreadable: "Label lines the board cannot read: {}; keeping waits until they are fixed: {}",
    learn: "Learn from my digits", learnRunning: "Learning", learnDone: "Learned", learnFailed: "Learning failed",
    learnRefused: "Cannot learn: {}", stepOf: "step {} of {}",
    preparing: "preparing your digits", training: "training", checking: "checking", promoting: "promoting",
    learnFurther: "Trained further since learn {} (now step {}): undo and redo are off",
    learnHeldFurther: "Trained further since learn {} (now step {}): its checkpoint cannot be used; discard it and learn again",
    learnHeld: "Not used: {}", learnUndone: "Undone: back to step {}", learnDiscarded: "Discarded the learn of step {}",
    testAccuracy: "MNIST {} → {}", recall: "digit {} recall {} → {}", noRecallFell: "no digit's recall fell", yours: "your digits {}/{} → {}/{}",
    accuracyFell: "the test accuracy fell {} → {} ({} points)", recallFell: "digit {}'s recall fell {} → {} ({} points)",
    and: " and ", learnUndo: "Undo the learn", learnRedo: "Redo the learn", learnAccept: "Use it anyway",
    learnDiscard: "Discard",
    precisionFell: "digit {}'s precision fell {} → {} ({} points)",
    misread: "Kept as {a}, but the network reads it as {} ({}): keep it?", misreadRemove: "Remove it",
    keptMisread: "Kept as {a}, but the network reads it as {} ({}): a mis-keep?",
    oneDigit: "All your kept digits are {}s: learning on one digit only can make the network call other digits {}. Keep some other digits too.",
    unknownChanges: "The served model does not know {} change(s) to your kept digits (kept, removed or relabelled since its last learn): learn to teach it.",
    taken: "{} s", left: "about {} s left",
    doing_copying: "copying your digits", doing_generating: "turning your digits into TFRecords",
    doing_starting: "starting the trainer (loading TensorFlow)", doing_training: "training",
    doing_checking: "scoring before and after on the test set", doing_promoting: "putting it in service",
    learnOn: "Learn on:", learnOnNet: "Learn {} from my digits", learnAgain: "Learn again anyway",
    learnBusy: "A learn is running on {} (one learn at a time on a board): wait until it ends.",
    named: digit => (digit === 8 ? "an " : "a ") + digit,  // a digit as {a} says it: "That was an 8"
  },
  zh: {
    title: "MNIST 手写板", hint: "写一个数字，或把一张数字照片拖到页面上。",
    keys: "键盘：选中手写板后，空格键落笔或抬笔，方向键移动笔（按住 Shift 小步移动）。",
    predict: "识别", undo: "撤销", clear: "清除", photo: "照片：", reads: "网络识别为",
    sees: "网络看到的输入：经过应用预处理后的 28x28 图像",
    board: "手写板", input: "网络的 28x28 输入", model: "模型",
    step: "训练步数 global_step", unknownStep: "训练步数未知", refused: "无法识别：{}", empty: "请先写一个数字。",
    offline: "服务器没有应答：mnist_app.py --serve 还在运行吗？",
    unreadable: "无法读取服务器的应答（HTTP {}）：mnist_app.py --serve 还在运行吗？",
    probability: "概率：", language: "语言",
    unsure: "可能是 {}（{}）——也可能是 {}？请在下面告诉我是哪个。",
    teach: "这是…", teachDigit: "这是 {a}", kept: "已保存为 {a}。", keepFailed: "没有保存：{}",
    keptTitle: "保存的数字", remove: "删除保存的数字 {}（{}）", removeFailed: "没有删除：{}",
    labelsUnreadable: "无法读取的标签行：{} 行；改好之前不能保存：{}",
    learn: "从我的数字学习", learnRunning: "正在学习", learnDone: "学习完成", learnFailed: "学习失败",
    learnRefused: "无法学习：{}", stepOf: "第 {} 步，共 {} 步",
    preparing: "准备你的数字", training: "训练", checking: "检查", promoting: "启用",
    learnFurther: "学习 {} 之后又训练过（现在第 {} 步）：撤销和重做不可用",
    learnHeldFurther: "学习 {} 之后又训练过（现在第 {} 步）：它的检查点不能再用；请丢弃它再学习",
    learnHeld: "未启用：{}", learnUndone: "已撤销：回到第 {} 步", learnDiscarded: "已丢弃第 {} 步的学习结果",
    testAccuracy: "MNIST {} → {}", recall: "数字 {} 召回率 {} → {}", noRecallFell: "没有数字的召回率下降", yours: "你的数字 {}/{} → {}/{}",
    accuracyFell: "测试准确率从 {} 降到 {}（{} 个百分点）", recallFell: "数字 {} 的召回率从 {} 降到 {}（{} 个百分点）",
    and: "，", learnUndo: "撤销学习", learnRedo: "重做学习", learnAccept: "仍然使用", learnDiscard: "丢弃",
    precisionFell: "数字 {} 的精确率从 {} 降到 {}（{} 个百分点）",
    misread: "已保存为 {a}，但网络把它读成 {}（{}）：确定保存吗？", misreadRemove: "删除它",
    keptMisread: "已保存为 {a}，但网络把它读成 {}（{}）：保存错了吗？",
    oneDigit: "你保存的数字全是 {}：只用一个数字学习，可能让网络把别的数字也认成 {}。请也保存一些别的数字。",
    unknownChanges: "正在使用的模型还不知道你对保存的数字做的 {} 处改动（上次学习之后新保存、删除或改了标签的）：学习一次就会教给它。",
    taken: "已用 {} 秒", left: "约剩 {} 秒",
    doing_copying: "复制你的数字", doing_generating: "把你的数字写成 TFRecords",
    doing_starting: "启动训练程序（加载 TensorFlow）", doing_training: "训练",
    doing_checking: "在测试集上比较学习前后", doing_promoting: "启用新的检查点",
    learnOn: "让哪个网络学习：", learnOnNet: "用我的数字训练 {}", learnAgain: "仍然再学一次",
    learnBusy: "{} 正在学习（一个手写板一次只学习一个网络）：请等它结束。",
    named: digit => String(digit),
  },
};
const LANGUAGE_KEY = "board.language";  // localStorage: the language picked with the switch
const BROWSER_LANGUAGE = (navigator.languages && navigator.languages[0] || navigator.language || "en").toLowerCase()
  .startsWith("zh") ? "zh" : "en";
let language = storedLanguage() || BROWSER_LANGUAGE;
let T = TEXT[language];
const FORMS = {zh: {checkpoint: "检查点 (checkpoint)", SavedModel: "SavedModel", LiteRT: "LiteRT (.tflite)"}};
window.boardFormName = form => (FORMS[language] || {})[form] || form;  // the model line's, for inside.js too

const board = document.getElementById("board");
const pen = board.getContext("2d");
const inputView = document.getElementById("input");
const digitView = document.getElementById("digit");
const errorView = document.getElementById("error");
const bars = document.getElementById("bars");
const teachButtons = [];  // #teach's ten digit buttons, 0 to 9
const thumbs = document.getElementById("thumbs");
const learnButton = document.getElementById("learn");
// An answer is shown as a guess (amber, "Maybe 2 — or 7?", the teach buttons highlighted) when its top probability
// is under this. The ten sum to 1, so this also catches every answer whose second is within 0.4 of its top.
const UNSURE_BELOW = 0.7;
const LEARN_POLL_MS = 1000;  // how often GET /board/learn is asked while the network learns
const FOLLOW_MS = 2000;  // how often GET /board/model and /board/learn are asked otherwise
const LINE_WIDTH = 18;  // of the board's 280 pixels: a marker's stroke, thinned or thickened by the preparation
const KEY_STEP = 10, KEY_SMALL_STEP = 3;

let strokes = [];        // each an array of [x, y] in the board's own pixels
let current = null;      // the stroke being drawn
let drawingPointer = null;  // pointerId of the pointer drawing `current` (null: the keyboard's pen, or none)
let keyPen = {x: 140, y: 140, down: false};
let asked = 0;           // requests sent; an answer to an older one is dropped
let message = null;      // [key of TEXT, detail] shown in #error, said again when the language changes
let model = null;        // /board/model's answer, for the model line
let shown = null;        // the answer shown: {digit, probabilities, input, blob, name, kept: digit or null, keeping}
let teachNote = null;    // [key of TEXT, values for its {}s] shown in #teach-status, or null; keptNote: #kept-status
let keptNote = null;
let learning = null;     // GET /board/learn's last answer {state, stage, line, step, steps, check, ...}, or null
let learnNote = null;    // a refusal of the learn's buttons, shown instead of the learn line (see refused)
let learnNoteMark = null; // the learns' state the refusal speaks of (standingMark); null: the next answer tells it
let learnSlot = "first"; // the network the learn's buttons work on: "first", or "compare" (#learn-on; --compare)
let following = null;    // the timeout of the next GET /board/model and /board/learn
window.boardTimes = [];  // [stroke end, answer shown] in ms (performance.now), for bench/board.py
const insidePanel = window.insidePanel || {wanted: () => false, show() {}, language() {}, model() {}};  // inside.js
const whyPanel = window.whyPanel || {show() {}, language() {}};  // why.js: the reasons, the map, "not a digit"
window.boardAgain = () => { if (shown) send(shown.blob, shown.name); };  // the Inside panel opened: ask again
window.boardPicture = () => (shown ? {blob: shown.blob, name: shown.name} : null);  // history.js plays it back

function storedLanguage() {
  try {
    const kept = localStorage.getItem(LANGUAGE_KEY);
    return TEXT.hasOwnProperty(kept) ? kept : null;
  } catch (e) {  // storage turned off: the browser's language
    return null;
  }
}

function chooseLanguage(chosen) {
  language = chosen;
  try { localStorage.setItem(LANGUAGE_KEY, chosen); } catch (e) { /* storage turned off: kept for this visit only */ }
  applyLanguage();
}

function applyLanguage() {
  T = TEXT[language];
  document.documentElement.lang = language === "zh" ? "zh-CN" : "en";
  document.title = T.title;
  for (const node of document.querySelectorAll("[data-text]")) node.textContent = T[node.dataset.text];
  for (const button of document.querySelectorAll("#lang [data-lang]")) {
    button.setAttribute("aria-pressed", String(button.dataset.lang === language));
  }
  document.getElementById("lang").setAttribute("aria-label", T.language);
  board.setAttribute("aria-label", T.board);
  inputView.setAttribute("aria-label", T.input);
  for (let d = 0; d < 10; d++) {
    document.querySelector(`#bar-${d} .bar`).setAttribute("aria-label", `${T.probability} ${d}`);
  }
  showModelLine();
  showMessage(message);
  showVerdict();
  showTeach();
  for (const item of thumbs.children) labelThumb(item);
  showKeptNote();
  showLearnOn();
  showLearn();
  insidePanel.language(language);
  whyPanel.language(language);
}

function say(note) {  // note: [key of TEXT, values for its {}s in order ({a}: a digit, named), or null for ""
  if (!note) return "";
  let next = 1;
  return T[note[0]].replace(/\{a?\}/g, found => found === "{a}" ? T.named(note[next++]) : String(local(note[next++])));
}

// The board's routes answer an error with its line, and with its Chinese twin ("zh") when a request's
// Accept-Language names zh, as every request of the page's does (TWINS): a line of the server's is kept as
// {en, zh} and said in the page's language, again when it changes.
const TWINS = {"Accept-Language": "en, zh"};

function serverLine(body, en = "error", zh = "zh") {  // {en, zh} of a line of the server's answer `body`
  return {en: body[en], zh: body[zh] || body[en]};
}

function local(value) {  // a server's {en, zh} line in the page's language; any other value as it is
  return value !== null && typeof value === "object" ? value[language] || value.en : value;
}

function percent(p) {
  return (100 * p).toFixed(1) + "%";
}

function showMessage(shown) {  // shown: [key of TEXT, detail for its {}], or null for none
  message = shown;
  errorView.textContent = shown ? T[shown[0]].replace("{}", () => local(shown[1])) : "";
}

function makeBars() {
  for (let d = 0; d < 10; d++) {
    const item = document.createElement("li");
    item.id = "bar-" + d;
    item.innerHTML = `<span>${d}</span><span class="bar" role="meter" aria-valuemin="0" aria-valuemax="1"
      aria-valuenow="0"><span class="fill"></span></span><span class="value"></span>`;
    bars.appendChild(item);
  }
}

function redraw() {
  pen.fillStyle = "#fff";
  pen.fillRect(0, 0, board.width, board.height);
  pen.strokeStyle = "#000";
  pen.fillStyle = "#000";
  pen.lineWidth = LINE_WIDTH;
  pen.lineCap = pen.lineJoin = "round";
  for (const stroke of current ? strokes.concat([current]) : strokes) {
    if (stroke.length === 1) {
      pen.beginPath();
      pen.arc(stroke[0][0], stroke[0][1], LINE_WIDTH / 2, 0, 2 * Math.PI);
      pen.fill();
      continue;
    }
    pen.beginPath();
    pen.moveTo(stroke[0][0], stroke[0][1]);
    for (const [x, y] of stroke.slice(1)) pen.lineTo(x, y);
    pen.stroke();
  }
  if (document.activeElement === board && !current) {  // the keyboard's pen, when the board has the focus
    pen.strokeStyle = "#2a6fdb";
    pen.lineWidth = 2;
    pen.beginPath();
    pen.arc(keyPen.x, keyPen.y, LINE_WIDTH / 2, 0, 2 * Math.PI);
    pen.stroke();
  }
}

function point(event) {
  // The board's own pixel under the pointer. clientX and getBoundingClientRect are both in the page's CSS pixels,
  // whatever the page zoom or the screen's pixel ratio; the box is the border's, so the border is taken off, in the
  // page's pixels: a CSS zoom on a parent (or a transform) scales it as it scales the box (box.width / offsetWidth),
  // across and down each by its own (a transform's scale(1.3, 0.8)).
  const box = board.getBoundingClientRect();
  const zoomX = box.width / board.offsetWidth || 1, zoomY = box.height / board.offsetHeight || 1;
  const left = box.left + board.clientLeft * zoomX, top = box.top + board.clientTop * zoomY;
  return [(event.clientX - left) * board.width / (board.clientWidth * zoomX),
          (event.clientY - top) * board.height / (board.clientHeight * zoomY)];
}

function startStroke(at, pointerId = null) {
  showPhotoName("");
  current = [at];
  drawingPointer = pointerId;
  redraw();
}

function endStroke() {
  if (!current) return;
  strokes.push(current);
  current = null;
  drawingPointer = null;
  const ended = performance.now();
  redraw();
  predictDrawing(ended);
}

function resetAnswer() {
  asked++;
  insidePanel.show(null);
  whyPanel.show(null);
  showAnswer(null);
  digitView.textContent = "?";
  showMessage(null);
  showBars(null);
  inputView.getContext("2d").clearRect(0, 0, 28, 28);
}

function showBars(probabilities) {
  const top = probabilities ? probabilities.indexOf(Math.max(...probabilities)) : -1;
  for (let d = 0; d < 10; d++) {
    const item = document.getElementById("bar-" + d);
    const p = probabilities ? probabilities[d] : 0;
    item.classList.toggle("top", d === top);
    item.querySelector(".fill").style.width = (100 * p).toFixed(1) + "%";
    item.querySelector(".bar").setAttribute("aria-valuenow", p.toFixed(4));
    item.querySelector(".value").textContent = probabilities ? percent(p) : "";
  }
}

function showInput(pixels) {
  const context = inputView.getContext("2d");
  const image = context.createImageData(28, 28);
  pixels.forEach((v, i) => { image.data.set([v, v, v, 255], 4 * i); });
  context.putImageData(image, 0, 0);
}

async function ask(blob, name) {
  // The server's answer to a picture: {digit, probabilities, input}, {error} (its refusal), or {problem: [key of
  // TEXT, detail]} when there is no answer to read: then the page says so plainly, not the browser's exception.
  let response;
  try {
    response = await fetch(insidePanel.wanted() ? "/board/inside" : "/board/predict", {method: "POST", body: blob,
      headers: {...TWINS, "Content-Type": blob.type || "application/octet-stream",
                "X-Filename": encodeURIComponent(name)}});
  } catch (e) {  // no answer at all: the server stopped, or the network is down
    return {problem: ["offline", ""]};
  }
  try {
    const answer = await response.json();
    if (typeof answer.error === "string" || (response.ok && Array.isArray(answer.probabilities))) return answer;
  } catch (e) { /* not JSON: a proxy's or another server's error page */ }
  return {problem: ["unreadable", String(response.status)]};
}

async function send(blob, name, ended) {
  const mine = ++asked;
  document.body.dataset.state = "busy";
  const answer = await ask(blob, name);
  if (mine !== asked) return;  // a newer stroke or a Clear came meanwhile
  document.body.dataset.state = "ready";
  if (answer.problem || answer.error !== undefined) {
    digitView.textContent = "?";
    showBars(null);
    inputView.getContext("2d").clearRect(0, 0, 28, 28);
    showMessage(answer.problem || ["refused", serverLine(answer)]);
    showAnswer(null);
  } else {
    showMessage(null);
    digitView.textContent = String(answer.digit);
    showBars(answer.probabilities);
    showInput(answer.input);
    showAnswer({digit: answer.digit, probabilities: answer.probabilities, input: answer.input, blob, name,
                kept: null, keeping: false});
  }
  insidePanel.show(answer.problem || answer.error !== undefined ? null : answer);
  whyPanel.show(answer.problem || answer.error !== undefined ? null : answer, blob, name);
  document.body.dataset.answers = String(Number(document.body.dataset.answers || 0) + 1);
  if (ended !== undefined) window.boardTimes.push([ended, performance.now()]);
}

function predictDrawing(ended) {
  if (!strokes.length) {
    resetAnswer();
    showMessage(["empty", ""]);
    return;
  }
  const keyPenShown = document.activeElement === board;
  if (keyPenShown) { board.blur(); redraw(); }  // the keyboard pen's circle is no ink
  board.toBlob(blob => send(blob, "drawing.png", ended), "image/png");
  if (keyPenShown) { board.focus({preventScroll: true}); redraw(); }
}

function showPhotoName(name) {  // the chosen photo's name beside the picker, "" when the board is drawn on again
  document.getElementById("photo-name").textContent = name;
}

function sendPhoto(file) {
  strokes = [];
  current = drawingPointer = null;
  redraw();
  showPhotoName(file.name || "");
  send(file, file.name || "photo");
}

// One pointer draws at a time: the first one down, until it lifts. A second finger on a phone is most often the
// hand holding it, a palm or the start of a pinch, not a second stroke of the digit; drawn, its ink would join the
// digit the network reads. Its events are ignored, so no line ever joins two fingers.
board.addEventListener("pointerdown", event => {
  if (event.button !== 0 || current) return;
  event.preventDefault();
  board.setPointerCapture(event.pointerId);
  startStroke(point(event), event.pointerId);
});
board.addEventListener("pointermove", event => {
  if (!current || event.pointerId !== drawingPointer) return;
  event.preventDefault();
  const coalesced = event.getCoalescedEvents ? event.getCoalescedEvents() : [];
  for (const e of coalesced.length ? coalesced : [event]) current.push(point(e));
  redraw();
});
for (const type of ["pointerup", "pointercancel", "lostpointercapture"]) {
  board.addEventListener(type, event => { if (current && event.pointerId === drawingPointer) endStroke(); });
}
board.addEventListener("focus", redraw);
board.addEventListener("blur", () => { if (keyPen.down) { keyPen.down = false; endStroke(); } else redraw(); });

board.addEventListener("keydown", event => {
  const step = event.shiftKey ? KEY_SMALL_STEP : KEY_STEP;
  const moves = {ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step]};
  if (event.key === " " || event.key === "Enter") {
    event.preventDefault();
    keyPen.down = !keyPen.down;
    if (keyPen.down) startStroke([keyPen.x, keyPen.y]); else endStroke();
  } else if (moves[event.key]) {
    event.preventDefault();
    const [dx, dy] = moves[event.key];
    keyPen.x = Math.min(board.width, Math.max(0, keyPen.x + dx));
    keyPen.y = Math.min(board.height, Math.max(0, keyPen.y + dy));
    if (keyPen.down) current.push([keyPen.x, keyPen.y]);
    redraw();
  } else if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "z") {
    event.preventDefault();
    undo();
  } else if (event.key === "Escape" || event.key === "Delete") {
    event.preventDefault();
    clearBoard();
  }
});

function undo() {
  keyPen.down = false;
  current = drawingPointer = null;
  strokes.pop();
  redraw();
  if (strokes.length) predictDrawing(); else resetAnswer();
}

function clearBoard() {
  keyPen.down = false;
  current = drawingPointer = null;
  strokes = [];
  showPhotoName("");
  redraw();
  resetAnswer();
}

document.getElementById("lang").addEventListener("click", event => {
  const chosen = event.target.closest("[data-lang]");
  if (chosen) chooseLanguage(chosen.dataset.lang);
});
document.getElementById("clear").addEventListener("click", clearBoard);
document.getElementById("undo").addEventListener("click", undo);
document.getElementById("predict").addEventListener("click", () => predictDrawing());
document.getElementById("photo").addEventListener("change", event => {
  if (event.target.files.length) sendPhoto(event.target.files[0]);
  event.target.value = "";
});
document.addEventListener("dragover", event => { event.preventDefault(); board.classList.add("dragging"); });
document.addEventListener("dragleave", () => board.classList.remove("dragging"));
document.addEventListener("drop", event => {
  event.preventDefault();
  board.classList.remove("dragging");
  if (event.dataTransfer.files.length) sendPhoto(event.dataTransfer.files[0]);
});

// ---------------------------------------------------------------- is it sure, and keeping what it was

function guess(probabilities) {  // {first, second: the two likeliest digits, unsure: whether to show a guess}
  const order = probabilities.map((p, d) => d).sort((a, b) => probabilities[b] - probabilities[a]);
  const [first, second] = order;
  return {first, second, unsure: probabilities[first] < UNSURE_BELOW};
}

function showAnswer(answer) {  // answer: the answer now shown (see `shown`), or null for none
  shown = answer;
  teachNote = null;
  showVerdict();
  showTeach();
}

function showVerdict() {
  const seen = shown && guess(shown.probabilities);
  const unsure = Boolean(seen && seen.unsure);
  document.getElementById("verdict").textContent = unsure ?
    say(["unsure", seen.first, percent(shown.probabilities[seen.first]), seen.second]) : "";
  document.body.dataset.sure = shown ? String(!unsure) : "";
  digitView.classList.toggle("unsure", unsure);
  bars.classList.toggle("unsure", unsure);
  document.getElementById("teach").classList.toggle("invite", unsure);
}

function makeTeachButtons() {
  const row = document.querySelector("#teach .digits");
  for (let d = 0; d < 10; d++) {
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.digit = String(d);
    button.textContent = String(d);
    button.addEventListener("click", () => keepShown(d));
    row.appendChild(button);
    teachButtons.push(button);
  }
}

function showTeach() {  // one keep per answer: the buttons wait for an answer, and for nothing once it is kept
  const open = Boolean(shown && shown.kept === null && !shown.keeping);
  teachButtons.forEach((button, d) => {
    button.disabled = !open;
    button.setAttribute("aria-label", say(["teachDigit", d]));
    button.classList.toggle("answered", Boolean(shown) && shown.digit === d);
    button.classList.toggle("chosen", Boolean(shown) && shown.kept === d);
  });
  const status = document.getElementById("teach-status");
  status.textContent = say(teachNote);
  const misread = shown && shown.misread;
  if (misread && teachNote && teachNote[0] === "misread") {  // "keep it?": a button removes the keep
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "misread-remove";
    remove.textContent = T.misreadRemove;
    remove.addEventListener("click", () => removeMisread(misread.name));
    status.append(" ", remove);
  }
}

async function removeMisread(name) {  // the "Remove it" of a keep the network reads as another digit
  const item = Array.from(thumbs.children).find(child => child.dataset.name === name);
  if (item) await removeKept(item);
  else await call("/board/kept/" + encodeURIComponent(name), {method: "DELETE"}).then(loadKept);
  if (shown && shown.misread && shown.misread.name === name) {
    shown.misread = null;
    teachNote = null;
    showTeach();
  }
}

async function call(url, options) {
  // {status, body: the answer's JSON or null}; status 0 when no answer came (the server stopped, the network is down)
  let response;
  try {
    response = await fetch(url, {...options, headers: {...TWINS, ...(options && options.headers)}});
  } catch (e) {
    return {status: 0, body: null};
  }
  try {
    return {status: response.status, body: await response.json()};
  } catch (e) {  // not JSON: a proxy's or another server's page
    return {status: response.status, body: null};
  }
}

// The note for a reply that is not the answer asked for: TEXT[key] with the server's one line, or why there is none.
function refusal(reply, key) {
  if (reply.status === 0) return ["offline"];
  if (reply.body && typeof reply.body.error === "string") return [key, serverLine(reply.body)];
  return ["unreadable", reply.status];
}

function base64(blob) {  // the blob's bytes in base64 (a string), read by the browser
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result.slice(reader.result.indexOf(",") + 1));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

async function keepShown(digit) {
  // POST /board/keep: the answer's prepared input under `digit`, with the drawing or photo as it was sent.
  const answer = shown;
  if (!answer || answer.kept !== null || answer.keeping) return;
  answer.keeping = true;
  showTeach();
  const request = {digit, input: answer.input, name: answer.name};
  let original = null;
  try {
    original = await base64(answer.blob);
  } catch (e) { /* a photo removed from the disk meanwhile: its prepared input alone */ }
  const post = body => call(learnPath("/board/keep"), {method: "POST", headers: {"Content-Type": "application/json"},
                                            body: JSON.stringify(body)});
  let reply = await post(original ? {...request, original} : request);
  if (reply.status === 413 && original) reply = await post(request);  // a photo too big to send twice in base64
  answer.keeping = false;
  const kept = reply.status === 200 && reply.body && reply.body.kept;
  if (kept) {
    answer.kept = digit;
    showKeptCount(reply.body.count);
    addThumbs([kept], true);
  }
  const misread = kept && reply.body.misread;  // the network reads it as another digit at >= 99%: a mis-click?
  if (misread) answer.misread = {name: kept.name, ...misread};
  if (answer === shown) {  // else a newer answer is shown, with its own buttons
    teachNote = misread ? ["misread", digit, misread.reads, percent(misread.probability)]
      : kept ? ["kept", digit] : refusal(reply, "keepFailed");
    showTeach();
  }
}

// ---------------------------------------------------------------- the kept digits
// GET /board/kept answers a page at a time, newest first. The next page is asked for when the list's last item
// scrolls into view, and a thumbnail's picture only when it does: thousands of kept digits cost the page what it
// shows.

const KEPT_PAGE = 100;   // kept digits asked for at a time (GET /board/kept?limit=)
let keptMore = false;    // whether digits kept before the last one listed are left to ask for
let keptAsking = false;  // a page of them is being asked for
const thumbInView = new IntersectionObserver(seen => {  // a thumbnail scrolled into view: its picture is asked for
  for (const entry of seen) {
    if (!entry.isIntersecting) continue;
    const picture = entry.target.querySelector("img");
    picture.src = picture.dataset.src;
    thumbInView.unobserve(entry.target);
  }
}, {root: thumbs, rootMargin: "64px"});
const endInView = new IntersectionObserver(seen => {  // the last item scrolled into view: the next page
  if (seen.some(entry => entry.isIntersecting)) loadOlder();
}, {root: thumbs, rootMargin: "64px"});

function showKeptCount(count) {
  document.getElementById("kept").textContent = String(count);
}

function showKeptNote() {
  document.getElementById("kept-status").textContent = say(keptNote);
}

function addThumbs(entries, newer) {  // entries [{name, digit}] newest first; newer: kept after those shown
  const present = new Set(Array.from(thumbs.children, item => item.dataset.name));
  const items = entries.filter(entry => !present.has(entry.name)).map(makeThumb);
  if (newer) thumbs.prepend(...items); else thumbs.append(...items);
  watchEnd();
}

function watchEnd() {  // the list's last item is watched while older digits are left to ask for
  endInView.disconnect();
  if (keptMore && thumbs.lastElementChild) endInView.observe(thumbs.lastElementChild);
}

function heardPage(listing) {  // a page of GET /board/kept: its count, whether more are left, unreadable lines
  showKeptCount(listing.count);
  keptMore = Boolean(listing.more);
  const unreadable = Array.isArray(listing.unreadable) ? listing.unreadable : [];
  const twins = Array.isArray(listing.unreadable_zh) ? listing.unreadable_zh : [];
  keptNote = unreadable.length ? ["labelsUnreadable", unreadable.length, {en: unreadable[0], zh: twins[0] || unreadable[0]}]
    : null;
  showKeptNote();
}

function makeThumb(entry) {  // entry.misread: the network reads it as another digit at >= 99% (kept by hand too)
  const item = document.createElement("li");
  item.dataset.name = entry.name;
  item.dataset.digit = String(entry.digit);
  if (entry.misread) {
    item.classList.add("misread");
    item.dataset.reads = String(entry.misread.reads);
    item.dataset.probability = String(entry.misread.probability);
  }
  const picture = document.createElement("img");
  picture.dataset.src = "/board/kept/" + encodeURIComponent(entry.name);  // asked for once in view (thumbInView)
  picture.width = picture.height = 28;
  picture.alt = "";  // the label beside it says the digit; the picture is the network's input, for the eye
  const label = document.createElement("span");
  label.textContent = String(entry.digit);
  const remove = document.createElement("button");
  remove.type = "button";
  remove.className = "remove";
  remove.textContent = "×";
  remove.addEventListener("click", () => removeKept(item));
  item.append(picture, label, remove);
  labelThumb(item);
  thumbInView.observe(item);
  return item;
}

function labelThumb(item) {
  const remove = item.querySelector(".remove");
  remove.setAttribute("aria-label", say(["remove", item.dataset.digit, item.dataset.name]));
  remove.title = remove.getAttribute("aria-label");
  if (item.dataset.reads !== undefined) {  // flagged: said on the digit beside the picture, as the keep's note says it
    item.querySelector("span").title = say(["keptMisread", Number(item.dataset.digit), item.dataset.reads,
                                            percent(Number(item.dataset.probability))]);
  }
}

async function removeKept(item) {  // DELETE /board/kept/<name>; the focus goes to a neighbour's ×, for the keyboard
  const remove = item.querySelector(".remove");
  remove.disabled = true;
  const next = item.nextElementSibling || item.previousElementSibling;
  const reply = await call("/board/kept/" + encodeURIComponent(item.dataset.name), {method: "DELETE"});
  if (reply.status === 200 && reply.body && typeof reply.body.count === "number") {
    keptNote = null;
    item.remove();
    showKeptCount(reply.body.count);
    watchEnd();
  } else if (reply.status === 404) {  // removed meanwhile, from another page
    keptNote = null;
    await loadKept();
  } else {
    keptNote = refusal(reply, "removeFailed");
    remove.disabled = false;
  }
  showKeptNote();
  if (next && next.isConnected && !item.isConnected) next.querySelector(".remove").focus();
}

function listed(reply) {  // whether a reply is a page of GET /board/kept
  return reply.status === 200 && reply.body && Array.isArray(reply.body.entries);
}

async function loadKept() {  // the newest page of GET /board/kept; a server that keeps no digits: the section is hidden
  const reply = await call(`/board/kept?limit=${KEPT_PAGE}`);
  if (reply.status === 404) {
    document.getElementById("kept-digits").hidden = document.getElementById("teach").hidden = true;
  } else if (listed(reply)) {
    thumbs.replaceChildren();
    heardPage(reply.body);
    addThumbs(reply.body.entries, false);
  } else {
    keptNote = refusal(reply, "keepFailed");
    showKeptNote();
  }
}

async function loadOlder() {  // the page of digits kept before the last one listed
  if (keptAsking || !keptMore || !thumbs.lastElementChild) return;
  keptAsking = true;
  const before = thumbs.lastElementChild.dataset.name;
  const reply = await call(`/board/kept?limit=${KEPT_PAGE}&before=${encodeURIComponent(before)}`);
  keptAsking = false;
  if (listed(reply)) {
    heardPage(reply.body);
    addThumbs(reply.body.entries, false);
  } else if (reply.status === 404) {  // that digit was removed meanwhile: from the newest again
    await loadKept();
  } else {
    keptNote = refusal(reply, "keepFailed");
    showKeptNote();
  }
}

// ---------------------------------------------------------------- learning from them
// With --compare, #learn-on chooses the network the learn's buttons and line are about (?model=compare: its own
// folder, its own trainer); the kept digits are one store for both. One learn runs at a time on a board: the other
// network's line says which folder is learning ("busy").

const LEARN_CHOICES = {"learn-undo": "undo", "learn-redo": "redo", "learn-accept": "accept", "learn-discard": "discard"};

function stepOf(name) {  // the global_step in a checkpoint's name: "mnist_model-2600" -> "2600"
  return String(name || "").replace(/^.*-/, "");
}

function checkLine(check) {  // a learn's check, before -> after: the test records, the digit that moved worst, yours
  const parts = [];
  const fixed = (value, places) => Number(value).toFixed(places);
  if (check.test) {
    parts.push(say(["testAccuracy", fixed(check.test.accuracy[0], 4), fixed(check.test.accuracy[1], 4)]));
    let worst = null;
    check.test.recall.forEach((pair, digit) => {
      if (pair && (worst === null || pair[1] - pair[0] < worst[1][1] - worst[1][0])) worst = [digit, pair];
    });
    parts.push(worst && worst[1][1] < worst[1][0] ? say(["recall", worst[0], fixed(worst[1][0], 3), fixed(worst[1][1], 3)])
      : T.noRecallFell);
  }
  const kept = check.kept;
  parts.push(say(["yours", kept.right[0], kept.count, kept.right[1], kept.count]));
  return parts.join(" · ");
}

function fellLine(check) {  // what fell past the limits, in words
  const points = f => (100 * (f.after - f.before)).toFixed(1).replace("-", "−");
  return check.fell.map(f => f.digit === null ?
    say(["accuracyFell", Number(f.before).toFixed(4), Number(f.after).toFixed(4), points(f)]) :
    say([f.measure === "precision" ? "precisionFell" : "recallFell", f.digit, Number(f.before).toFixed(3),
         Number(f.after).toFixed(3), points(f)])).join(T.and);
}

function learnPath(path) {  // a /board/learn route (and /board/keep, for its misread flag) for the network chosen
  return learnSlot === "compare" ? path + "?model=compare" : path;
}

function learnNets() {  // {first, compare}: the networks' names from /board/model (compare: null without --compare)
  return {first: model ? model.network : "", compare: model && model.compare ? model.compare.network : null};
}

function showLearnOn() {  // #learn-on: a button per network, shown only when the board serves two
  const group = document.getElementById("learn-on");
  const nets = learnNets();
  group.hidden = learnButton.hidden || !nets.compare;
  if (!nets.compare && learnSlot === "compare") chooseLearnSlot("first");
  document.getElementById("learn-on-label").textContent = T.learnOn;
  for (const button of group.querySelectorAll("button[data-slot]")) {
    button.textContent = nets[button.dataset.slot] || "";
    button.setAttribute("aria-pressed", String(button.dataset.slot === learnSlot));
  }
}

function chooseLearnSlot(slot) {  // another network chosen: its learn line is asked for at once
  if (slot === learnSlot) return;
  learnSlot = slot;
  learning = null;
  learnNote = null;
  showLearnOn();
  showLearn();
  askLearn();
}

function learnLine() {  // the learn line's text, of `learning`
  const state = learning ? learning.state : "";
  if (state === "running") {
    const parts = [T.learnRunning];
    if (learning.stage && T[learning.stage]) parts.push(T[learning.stage]);
    if (learning.stage === "training" && learning.steps) parts.push(say(["stepOf", learning.step || 0, learning.steps]));
    const doing = learning.doing && T["doing_" + learning.doing];  // what it does, for how long, the time left
    if (doing && doing !== T[learning.stage]) parts.push(doing);
    if (typeof learning.taken === "number") parts.push(say(["taken", learning.taken]));
    if (typeof learning.left === "number") parts.push(say(["left", learning.left]));
    return parts.join(" · ");
  }
  const further = learning && learning.further;  // the folder trained past the learn: its check is old news
  if (further && state !== "failed") {  // a held learn's too: "use it anyway" would be refused (promotion.accept)
    return say([state === "held" ? "learnHeldFurther" : "learnFurther", further.learn,
                further.step === null ? stepOf(further.newest) : further.step]);
  }
  if (state === "done" && learning.check) return [T.learnDone, checkLine(learning.check)].join(" · ");
  if (state === "held" && learning.check) return say(["learnHeld", fellLine(learning.check)]);
  if (state === "undone") return say(["learnUndone", stepOf(learning.before)]);
  if (state === "discarded") return say(["learnDiscarded", stepOf(learning.after)]);
  if (state === "failed") return [T.learnFailed, local(serverLine(learning, "line", "line_zh"))].filter(Boolean).join(" · ");
  return state === "done" ? T.learnDone : "";
}

function showLearn() {  // #learn, its line and the buttons beside it, of `learning` (or the refusal `learnNote`)
  const state = learning ? learning.state : "";
  const busy = learning && state !== "running" ? learning.busy : null;  // a learn on the other network's folder
  learnButton.disabled = state === "running" || state === "held" || Boolean(busy);
  const nets = learnNets();
  const again = nothingNew();  // the served model learned every kept digit: the button learns anyway (?again=1)
  learnButton.textContent = again ? T.learnAgain : nets.compare ? say(["learnOnNet", nets[learnSlot]]) : T.learn;
  const progress = document.getElementById("learn-progress");
  progress.dataset.state = state;
  progress.textContent = learnNote ? say(learnNote) : learnLine();
  const notes = [];  // before a learn: all keeps one digit; changes the served model does not know
  if (learning && typeof learning.one_digit === "number") notes.push(say(["oneDigit", learning.one_digit, learning.one_digit]));
  if (learning && learning.unknown > 0 && state !== "running") notes.push(say(["unknownChanges", learning.unknown]));
  if (again) notes.push(local(serverLine(learning, "nothing_new", "nothing_new_zh")));
  if (busy) notes.push(say(["learnBusy", busy]));
  const note = document.getElementById("learn-note");
  if (note) note.textContent = notes.join(" ");
  const shown = {"learn-undo": Boolean(learning && learning.undo) && state !== "running",
                 "learn-redo": Boolean(learning && learning.redo) && state !== "running",
                 "learn-accept": state === "held" && !(learning && learning.further), "learn-discard": state === "held"};
  for (const [id, key] of Object.entries({"learn-undo": "learnUndo", "learn-redo": "learnRedo",
                                          "learn-accept": "learnAccept", "learn-discard": "learnDiscard"})) {
    const button = document.getElementById(id);
    button.textContent = T[key];
    button.hidden = !shown[id];
  }
}

function nothingNew() {  // whether GET /board/learn says a learn would train on the same digits again (nothing_new)
  return Boolean(learning && learning.nothing_new) && learning.state !== "running";
}

function standingMark(body) {  // what of a GET /board/learn answer a refusal speaks of: the learns, not the progress
  return JSON.stringify(["state", "learn", "before", "after", "undo", "redo", "further", "busy", "folder"]
    .map(key => body[key] === undefined ? null : body[key]));
}

function refused(reply, poll) {  // a refusal shown; a click's stays until another click or its state changes
  learnNote = refusal(reply, "learnRefused");
  learnNoteMark = poll ? "poll" : null;  // a failed GET's goes at the next answer
  showLearn();
}

function heard(reply) {  // whether a reply is /board/learn's state; if so it is shown
  if (!(reply.body && typeof reply.body.state === "string")) return false;
  const finished = learning && learning.state === "running" && reply.body.state !== "running";
  learning = reply.body;
  const mark = standingMark(reply.body);  // the 2 s refresh keeps a click's refusal while the state stays
  if (learnNote && learnNoteMark === null) learnNoteMark = mark;
  else if (learnNote && mark !== learnNoteMark) learnNote = null;
  showLearn();
  if (finished) showModel();  // the model line names what now answers
  return true;
}

async function askLearn() {  // GET /board/learn: shown, or its refusal said
  const slot = learnSlot;
  const reply = await call(learnPath("/board/learn"));
  if (slot !== learnSlot) return;  // another network was chosen meanwhile: its own answer is on its way
  if (!heard(reply) && !learnButton.hidden) refused(reply, true);
}

async function checkLearn() {  // at page open: a server without /board/learn hides the button
  const reply = await call("/board/learn");
  learnButton.hidden = !heard(reply);
}

function follow() {  // GET /board/model and /board/learn every FOLLOW_MS, every LEARN_POLL_MS while one learns
  clearTimeout(following);
  const running = learning && learning.state === "running";
  following = setTimeout(async () => {
    await Promise.all([showModel(true), learnButton.hidden ? null : askLearn()]);
    follow();
  }, running ? LEARN_POLL_MS : FOLLOW_MS);
}

learnButton.addEventListener("click", async () => {
  learnButton.disabled = true;
  learnNote = null;  // another click: the last refusal goes
  const slot = learnSlot;
  const path = learnPath("/board/learn");
  const again = nothingNew() ? (path.includes("?") ? "&" : "?") + "again=1" : "";  // the button said so
  const reply = await call(path + again, {method: "POST"});
  if (slot !== learnSlot) {  // another network chosen meanwhile: its line is asked for; this one is followed there
    follow();
    return;
  }
  if (reply.status >= 200 && reply.status < 300) {
    if (!heard(reply)) {
      learning = {state: "running", stage: null, line: "", step: 0, steps: 0};
      showLearn();
    }
  } else {
    refused(reply);
  }
  follow();
});

for (const button of document.querySelectorAll("#learn-on button[data-slot]")) {
  button.addEventListener("click", () => chooseLearnSlot(button.dataset.slot));
}

for (const [id, choice] of Object.entries(LEARN_CHOICES)) {
  document.getElementById(id).addEventListener("click", async event => {
    event.target.disabled = true;
    learnNote = null;  // another click: the last refusal goes
    const slot = learnSlot;
    const reply = await call(learnPath(`/board/learn/${choice}`), {method: "POST"});
    event.target.disabled = false;
    if (slot === learnSlot && !(reply.status === 200 && heard(reply))) {
      refused(reply);
      await askLearn();  // the state the refusal speaks of, at once (its buttons); the refusal stays shown
    }
    await showModel(true);
  });
}

function showModelLine() {
  if (!model) return;
  const form = window.boardFormName(model.form);
  const step = model.global_step === null ? T.unknownStep : `${T.step} ${model.global_step}`;
  const line = document.getElementById("model");
  line.textContent = `${T.model}: ${model.network} · ${step} · ${form}`;
  line.title = model.source;
  line.dataset.network = model.network;
  line.dataset.form = model.form;
  line.dataset.step = String(model.global_step);
}

async function showModel(quiet) {  // GET /board/model; quiet (the page following it): a failure keeps the line
  let response, answer;
  try {
    response = await fetch("/board/model");
    answer = await response.json();
  } catch (e) {
    if (!quiet) showMessage(response ? ["unreadable", String(response.status)] : ["offline", ""]);
    return;
  }
  if (!response.ok || !answer.form) return;
  if (model && JSON.stringify(model) === JSON.stringify(answer)) return;  // the same model answers
  model = answer;
  showModelLine();
  showLearnOn();
  showLearn();
  insidePanel.model(model);
}

makeBars();
makeTeachButtons();
applyLanguage();
redraw();
showBars(null);
Promise.all([loadKept(), checkLearn()]).then(() => showModel()).then(follow);  // the model line last: the page is
// ready when it shows
document.body.dataset.state = "ready";
