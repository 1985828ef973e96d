"""The zh twin of each error line the board's routes send, so that a page in Chinese shows no English detail.

An error of a /board/ route asked with an Accept-Language naming zh (every request of the page's is) answers
{"error": its line, "zh": twin(line, status)} (table.error_reply); GET /board/learn's failed line comes with its
"line_zh", the Inside's "refused" with its "refused_zh"; the page shows the one of its language (board.js).

twin() keeps the names a line gives as they are (the file or folder that leads it, `commands`, paths, checkpoint
names, numbers, flags) and says its words in Chinese, phrase by phrase (PHRASES, in order: a longer phrase before a
phrase it holds, the general ones of pictures last). A line with words no phrase knows is never shown half in
English: it is said by its kind (KINDS, by HTTP status), after the name that leads it. A new error line that the
page shows gets its phrase here; tests/test_board_zh.py walks the board's error paths with the page in zh and fails
on a line said by its kind.
"""
import re

_N = r"(?P<n>[^\s(),;]+)"  # a number, a name or a checkpoint: no spaces
# (English, Chinese): a regular expression and its Chinese, the groups kept as they are.
PHRASES = [(re.compile(en), zh) for en, zh in (
    # the kept digits (mnistkit.keep, board/teach.py)
    (r"the input is blank \(every pixel is (?P<v>\d+)\): there is no digit to keep",
     r"输入是空白的（每个像素都是 \g<v>）：没有可保存的数字"),
    (r"(?P<c>[\d,]+) digits are kept, the most a keep folder holds; remove some \(x on the page\) or keep in "
     r"another folder \(--keep-dir\)",
     r"已经保存了 \g<c> 个数字，是一个保存文件夹的上限；请删掉一些（页面上的 ×），或保存到另一个文件夹（--keep-dir）"),
    (r"correct or delete line (?P<l>\d+) of (?P<f>.+?), then keep again", r"请改正或删除 \g<f> 的第 \g<l> 行，然后再保存"),
    (r"correct or delete line (?P<l>\d+) of (?P<f>.+?), then remove again",
     r"请改正或删除 \g<f> 的第 \g<l> 行，然后再删除"),
    (r"correct or delete line (?P<l>\d+) of (?P<f>.+?), then learn again",
     r"请改正或删除 \g<f> 的第 \g<l> 行，然后再学习"),
    (r"\((?P<k>\d+) more lines? cannot be read\)", r"（还有 \g<k> 行无法读取）"),
    (r"(?P<x>'[^']*') is labelled (?P<d>\d), not the (?P<e>\d) of its name",
     r"\g<x> 的标签是 \g<d>，不是它名字里的 \g<e>"),
    (r"(?P<x>'[^']*') is not a name the keep store gives \((?P<y>'[^']*')\)",
     r"\g<x> 不是保存的数字会用的名字（应像 \g<y>）"),
    (r"no kept digit (?P<x>'[^']*'); GET /board/kept lists them",
     r"没有保存的数字 \g<x>；GET /board/kept 会列出保存的数字"),
    (r"digit (?P<x>\S+) is not a digit 0-9", r"\g<x> 不是 0-9 的数字"),
    # the keep form's refusals (board/teach.py: KEEP_FORM): its keys are names
    (r'(?P<k>"digit") must be an integer 0-9, not (?P<x>.+)', r"\g<k> 必须是 0-9 的整数，不是 \g<x>"),
    (r'(?P<k>"input") must be (?P<n>\d+) integers 0-255, the (?P<s>\d+x\d+) input (?P<r>/board/predict) answered, '
     r"row by row", r"\g<k> 必须是 \g<n> 个 0-255 的整数：\g<r> 答复的 \g<s> 输入，逐行排列"),
    (r'(?P<k>"original") must be the picture\'s bytes in base64', r"\g<k> 必须是图片字节的 base64 编码"),
    (r'send (?P<i>"input") \(the prepared input\), (?P<o>"original") \(the picture in base64\), or both',
     r"请发送 \g<i>（准备好的输入）、\g<o>（base64 编码的图片），或两者都发"),
    (r'(?P<k>"name") must be the picture\'s file name \(a string\)', r"\g<k> 必须是图片的文件名（字符串）"),
    (r"limit must be a number of kept digits 1-(?P<m>\d+), not (?P<x>.+)",
     r"limit 必须是 1-\g<m> 之间的保存数字个数，不是 \g<x>"),
    (r"label (?P<x>'[^']*') is not a digit 0-9", r"标签 \g<x> 不是 0-9 的数字"),
    # a learn (board/teach.py, mnistkit.learn, mnistkit.promotion, mnistkit.folders)
    (r"no kept digits yet; keep some with the digit buttons first", "还没有保存的数字；请先用数字按钮保存一些"),
    # the choices' lines (promotion.undo, redo, accept, discard: Learning.choose's status), before the learn's own
    (r"back to (?P<a>.+?); the learned checkpoint is in (?P<b>.+?) \((?P<c>`[^`]*`) puts it back\)",
     r"已退回到 \g<a>；学到的检查点在 \g<b>（用 \g<c> 可以放回）"),
    (r"learned: (?P<a>.+?) again \(from (?P<b>.+?)\); go back with (?P<c>`[^`]*`)",
     r"重新启用了：\g<a>（从 \g<b> 学起）；用 \g<c> 可以退回"),
    (r"learned: (?P<a>.+?) \(from (?P<b>[^()]+?)\), though ", r"启用了：\g<a>（从 \g<b> 学起），尽管"),  # then fell's
    *[(r"discarded learn " + _N + r"'s checkpoint (?P<a>\S+); (?P<d>.+?) " + en, r"已丢弃学习 \g<n> 的检查点 \g<a>；\g<d> " + zh)
      for en, zh in ((r"goes on with (?P<b>.+)", r"继续使用 \g<b>"), ("holds no checkpoint", "里没有检查点"))],
    (r"learned: (?P<a>.+?) \(from (?P<b>.+?)\); go back with (?P<c>`[^`]*`)", r"学好了：\g<a>（从 \g<b> 学起）；用 \g<c> 可以退回"),
    *[(r"nothing new to learn: the model in service \((?P<m>\S+), learn (?P<n>\S+)\) learned " + en + r" kept in "
       r"(?P<k>.+?), and none was kept, removed or relabelled since",
       r"没有新的可学：正在使用的模型（\g<m>，学习 \g<n>）已经学过 \g<k> 里保存的" + zh + "，之后没有新保存、删除或改标签的")
      for en, zh in ((r"the 1 digit", "那 1 个数字"), (r"all (?P<c>\d+) digits", r"全部 \g<c> 个数字"))],
    (r'keep more digits \(or correct some\), or click "Learn again anyway" \((?P<a>POST /board/learn\?again=1)\) to '
     r"train on them once more", r"请再保存一些数字（或改正一些），或者点“仍然再学一次”（\g<a>）用它们再训练一次"),
    (r"keep more digits \(or correct some\), or give (?P<a>--again) to train on them once more",
     r"请再保存一些数字（或改正一些），或者加上 \g<a> 用它们再训练一次"),
    (r"(?P<x>again=\S*): give again=1 \(learn even with nothing new\) or leave it out",
     r"\g<x>：请给 again=1（没有新数字也学习）或者不给"),
    # a learn held by its check (learn.promote's LearnHeld, promotion.fell's words, promotion.choices)
    (r"^not promoted: ", "未启用："),
    *[(r"digit (?P<d>\d)'s " + en + r" fell (?P<a>\S+) → (?P<b>\S+) \((?P<p>\S+) points\)",
       r"数字 \g<d> 的" + zh + r"从 \g<a> 降到 \g<b>（\g<p> 个百分点）")
      for en, zh in (("recall", "召回率"), ("precision", "精确率"))],
    (r"the test accuracy fell (?P<a>\S+) → (?P<b>\S+) \((?P<p>\S+) points\)", r"测试准确率从 \g<a> 降到 \g<b>（\g<p> 个百分点）"),
    (r"(?<=）) and (?=数字|测试)", "，并且"),
    (r"; go back with (?P<c>`[^`]*`)$", r"；用 \g<c> 可以退回"),  # an accept's line, after what fell
    (r", past the limits \((?P<r>\S+) points for a digit, (?P<a>\S+) in all\)",
     r"，超过了上限（每个数字 \g<r> 个百分点，总体 \g<a> 个百分点）"),
    (r"; it waits in (?P<f>.+?): use it anyway with (?P<u>`[^`]*`), or discard it with (?P<d>`[^`]*`)",
     r"；它在 \g<f> 里等你决定：用 \g<u> 仍然使用，或用 \g<d> 丢弃"),
    (r"a learned checkpoint waits for your choice: use it anyway or discard it, then learn again",
     "有一个学习得到的检查点在等你决定：仍然使用或丢弃它，然后再学习"),
    (r"a learn is running on (?P<f>.+?); wait until it ends \(one learn at a time on a board\)",
     r"\g<f> 正在学习；请等它结束（一个手写板一次只学习一个网络）"),
    (r"this board serves no --compare network to learn on; start it with (?P<c>.+?), or learn on the first "
     r"\(model=first\)", r"这个手写板没有 --compare 网络可以学习；请用 \g<c> 启动，或让第一个网络学习（model=first）"),
    (r"a learn trains the checkpoint folder (?P<f>.+?), not this export, which would answer as before; serve that "
     r"folder \((?P<c>[^)]*)\), learn there, then export again \((?P<e>mnist_export\.py)\)",
     r"学习训练的是检查点文件夹 \g<f>，不是这个导出的模型，它会照旧回答；请让手写板使用那个文件夹（\g<c>），在那里学习，"
     r"然后重新导出（\g<e>）"),
    (r"learning needs the checkpoint folder this export came from", "学习需要导出这个模型的检查点文件夹"),
    (r"\((?P<f>.+?) holds no checkpoint\)", r"（\g<f> 里没有检查点）"),
    (r"serve that folder \((?P<c>[^)]*)\) and learn there", r"请让手写板使用那个文件夹（\g<c>），在那里学习"),
    (r"the model folder the board serves is gone", "手写板使用的模型文件夹不见了"),
    (r"the model folder the board serves holds no checkpoint any more", "手写板使用的模型文件夹里已经没有检查点"),
    (r"put it back, or serve another \((?P<c>[^)]*)\)", r"请把它放回去，或使用另一个（\g<c>）"),
    (r"another learn is working on this model folder; wait until it ends", "另一个学习正在使用这个模型文件夹；请等它结束"),
    (r"no such folder or TFRecord file; did you mean (?P<c>.+)\?$", r"没有这个文件夹或 TFRecords 文件；你是想写 \g<c> 吗？"),
    (r"no such folder or TFRecord file; run (?P<c>`[^`]+`) first", r"没有这个文件夹或 TFRecords 文件；请先运行 \g<c>"),
    (r"no such folder; did you mean (?P<c>.+)\?$", r"没有这个文件夹；你是想写 \g<c> 吗？"),  # cli.did_you_mean's
    (r"cannot write in this model folder \([^()]*\); nothing changed; make it writable, or copy it and give the copy "
     r"with (?P<o>--model-dir)", r"无法写入这个模型文件夹（只读或磁盘已满）；什么都没有改动；请让它可写，或复制一份，用 \g<o> 指定副本"),
    (r"(?P<h>`[^`]*` \([^)]*\)|another process \(pid \d+\)) is writing this folder; wait for it or use another "
     r"(?P<f>\S+)", r"\g<h> 正在写这个文件夹；请等它结束，或换一个 \g<f>"),
    (r"trained further since learn " + _N + r": its newest checkpoint is (?P<a>\S+), not (?P<b>\S+) that the learn "
     r"added; nothing undone \(an undo would take (?P<c>\S+) out of service too\)",
     r"学习 \g<n> 之后又训练过：最新的检查点是 \g<a>，不是这次学习加入的 \g<b>；没有撤销（撤销会让 \g<c> 也停止使用）"),
    (r"trained further since the undo: its newest checkpoint is (?P<a>\S+), not (?P<b>\S+) that learn " + _N +
     r" started from; nothing redone \(a redo would put learn \d+'s (?P<c>\S+) in service over the (?P<d>\S+) "
     r"trained since the undo\)",
     r"撤销之后又训练过：最新的检查点是 \g<a>，不是学习 \g<n> 开始时的 \g<b>；没有重做（重做会让学习 \g<n> 的 \g<c> "
     r"取代撤销之后训练出的同名检查点 \g<d> 投入使用）"),
    (r"trained further since the undo: its newest checkpoint is (?P<a>\S+), not (?P<b>\S+) that learn " + _N +
     r" started from; nothing redone \(a redo would put (?P<c>\S+) in service over (?P<d>\S+)\)",
     r"撤销之后又训练过：最新的检查点是 \g<a>，不是学习 \g<n> 开始时的 \g<b>；没有重做（重做会让 \g<c> 取代 \g<d> 投入使用）"),
    (r"(?P<b>\S+), the checkpoint learn " + _N + r" started from, is not there \(removed\?\); ",
     r"学习 \g<n> 开始时的检查点 \g<b> 不见了（被删除了？）；"),
    *[(rf"{there}; nothing {done} \(the learned checkpoint (?P<c>\S+) stays in (?P<f>.+)\)",
       rf"{zh_there}；没有{zh_done}（学到的检查点 \g<c> 仍在 \g<f>）")
      for there, zh_there in ((r"its newest checkpoint is (?P<a>\S+)", r"最新的检查点是 \g<a>"),
                              ("it holds no checkpoint", "文件夹里没有检查点"))
      for done, zh_done in (("redone", "重做"), ("accepted", "采用"))],
    (r"its newest checkpoint is now (?P<a>\S+), not (?P<b>\S+) that learn " + _N + r" started from; discard it and "
     r"learn again", r"最新的检查点现在是 \g<a>，不是学习 \g<n> 开始时的 \g<b>；请丢弃它再学习"),
    # the model folder's record read for a learn, undo or redo (folders.folder_record, learn_history: strict)
    (r"the model folder's record is not JSON \([^()]*\)", "模型文件夹的记录不是有效的 JSON"),
    (r"the model folder's record is unreadable \([^()]*\)", "模型文件夹的记录无法读取"),
    (r"the model folder's record is a JSON (?P<t>\w+), not an object", r"模型文件夹的记录是 JSON \g<t>，不是对象"),
    (r"its (?P<k>'[^']*') is (?P<x>.+?), not a list of (?:learns|its learns' numbers)",
     r"其中的 \g<k> 是 \g<x>，格式不对"),
    (r"its learn entry (?P<i>\d+) \(of (?P<n>\d+)\) is a JSON (?P<t>\w+), not an object",
     r"第 \g<i> 条学习记录（共 \g<n> 条）是 JSON \g<t>，不是对象"),
    (r"its learn entry (?P<i>\d+) \(of (?P<n>\d+)\) has (?P<k>\w+) (?P<x>.+?), not [^;]+",
     r"第 \g<i> 条学习记录（共 \g<n> 条）格式不对：\g<k> 是 \g<x>"),
    (r"two learn entries have the number (?P<n>\d+)", r"有两条学习记录的编号都是 \g<n>"),
    (r"it holds the folder's learns: correct it \(or put back a copy\) and try again; nothing changed",
     "它记录着这个文件夹的学习历史：请改正它（或放回一份副本）再试；什么都没有改动"),
    (r"correct it \(or put back a copy\) and try again; nothing changed", "请改正它（或放回一份副本）再试；什么都没有改动"),
    (r"no learn to undo \(each one here is undone, held or discarded\)",
     "没有可撤销的学习（这里的每一次都已撤销、搁置或丢弃）"),
    (r"no learn to undo", "没有可撤销的学习"),
    (r"no undone learn to redo", "没有可重做的学习"),
    (r"no learned checkpoint waits for a choice", "没有在等你决定的学习结果"),
    (r"the checkpoint from before the learn is gone; nothing undone", "学习之前的检查点不见了；没有撤销"),
    (r"the checkpoint from before the learn is damaged \((?P<w>.+)\); nothing undone \((?P<a>\S+) stays in service\)",
     r"学习之前的检查点已损坏（\g<w>）；没有撤销（\g<a> 仍在使用）"),
    (r"the checkpoint from before the learn is not all there \((?P<w>.+)\); nothing undone "
     r"\((?P<a>\S+) stays in service\)", r"学习之前的检查点不完整（\g<w>）；没有撤销（\g<a> 仍在使用）"),
    (r"the learned checkpoint is damaged \((?P<w>.+)\); nothing changed in (?P<f>.+)$",
     r"学习得到的检查点已损坏（\g<w>）；\g<f> 没有任何改动"),
    (r"the learned checkpoint is not all there \((?P<m>.+?) missing\); nothing changed in (?P<f>.+)$",
     r"学习得到的检查点不完整（缺少 \g<m>）；\g<f> 没有任何改动"),
    (r"the model folder is not there \(not trained yet, or gone: deleted or moved\?\); nothing to learn from: "
     r"train one \((?P<c>`[^`]*`)\) or give another --model-dir",
     r"模型文件夹不在（还没训练，或已被删除、移走？）；没有可学习的模型：请训练一个（\g<c>）或换一个 --model-dir"),
    (r"(?P<s>\S+) exited with status (?P<c>-?\d+)", r"\g<s> 以状态 \g<c> 退出"),
    (r"(?P<s>\S+) stopped by (?P<g>SIG[A-Z]+)", r"\g<s> 被 \g<g> 停止"),
    (r"(?P<s>\S+) ended without a checkpoint at step (?P<n>\d+)", r"\g<s> 结束时没有第 \g<n> 步的检查点"),
    (r"nothing learned; (?P<f>.+?) is unchanged", r"什么也没学到；\g<f> 没有改动"),
    (r"the kept digits were not turned into TFRecords; (?P<f>.+?) is unchanged",
     r"保存的数字没能写成 TFRecords；\g<f> 没有改动"),
    (r"the learned checkpoint could not be checked; (?P<f>.+?) is unchanged", r"没能检查学习得到的检查点；\g<f> 没有改动"),
    (r"^stopped; (?P<f>.+?) is unchanged", r"已停止；\g<f> 没有改动"),
    (r"the learned checkpoint was not kept", "学习得到的检查点没有保留"),
    (r"cannot add the learned checkpoint \([^)]*\); it is as it was", "无法加入学习得到的检查点；文件夹保持原样"),
    (r"no checkpoint to learn from, (?P<w>.+?); train one first \((?P<c>`[^`]*`)\)",
     r"没有可以学习的检查点（只有：\g<w>）；请先训练一个（\g<c>）"),
    (r"no checkpoint to learn from; train one first \((?P<c>`[^`]*`)\)", r"没有可以学习的检查点；请先训练一个（\g<c>）"),
    # a model that shows no layers (mnistkit.layers, board/model.py): the Inside panel's line
    (r"exported without its layers \(no (?P<s>`[^`]*`) signature\); export it again with mnist_export.py",
     r"导出时没有带上各层（没有 \g<s> 签名）；请用 mnist_export.py 重新导出"),
    (r"this model shows no layers", "这个模型不显示各层"),
    # a running learn's lines (GET /board/learn's "line": mnistkit.learn's, its trainer's and evaluator's)
    (r"learning from (?P<c>\d+) kept digits? of (?P<k>.+?) into (?P<m>\S+)$", r"从 \g<k> 里保存的 \g<c> 个数字学习，学到 \g<m>"),
    (r"learning from (?P<c>\d+) kept digits? into (?P<m>\S+)$", r"从保存的 \g<c> 个数字学习，学到 \g<m>"),
    (r"After (?P<s>\d+) training steps, loss on training batch is (?P<l>\S+?)\.?$",
     r"训练到第 \g<s> 步，训练批次上的损失是 \g<l>"),
    (r"After (?P<s>\d+) training steps, test accuracy = (?P<a>\S+) \((?P<c>[^,]+), (?P<f>[^)]+)\)",
     r"第 \g<s> 步的测试准确率 = \g<a>（\g<c>，\g<f>）"),
    (r"After (?P<s>\d+) training steps, your kept digits: (?P<r>\d+) of (?P<n>\d+) read right \((?P<c>[^)]+)\)",
     r"第 \g<s> 步：你保存的数字读对了 \g<r> 个，共 \g<n> 个（\g<c>）"),  # the learn's check (learn.KEPT_SCORE)
    (r"done at step (?P<s>\d+); checkpoint saved to (?P<c>\S+)$", r"在第 \g<s> 步完成；检查点已保存到 \g<c>"),
    (r"done at step (?P<s>\d+)$", r"在第 \g<s> 步完成"),  # a learn's trainer: its save into the staging not said
    (r"the learn's working folder", "学习用的临时文件夹"),
    (r"the learned checkpoint(?=\x03| *[,)])", "学习得到的检查点"),  # \x03: as a phrase's group (phrased)
    # the playback of the --history snapshots (board/playback.py)
    (r"a (?P<f>SavedModel|LiteRT) keeps no training history; serve the checkpoint folder it was exported from "
     r"\((?P<c>mnist_app\.py --serve --model-dir DIR)\)", r"\g<f> 不保存训练历史；请改用导出它的检查点文件夹启动服务（\g<c>）"),
    (r"no training history here; train with (?P<c>mnist_backward\.py --history \d+) \(its default\) to keep one",
     r"这里没有训练历史；用 \g<c>（默认值）训练才会保存"),
    (r"cannot read this history snapshot", "无法读取这个训练历史快照"),
    # a picture route's body sent as a form (board/page.py: picture_sent)
    (r"(?P<r>POST /board/[a-z]+) takes a picture's own bytes, not a form holding it \((?P<c>curl -F)\)",
     r"\g<r> 接收的是图片本身的字节，不是装着图片的表单（\g<c>）"),
    (r" \((?P<c>curl -d) sent it as form text, its line ends dropped\)", r"（\g<c> 把文件当作表单文本发送，去掉了其中的换行）"),
    (r"send the file itself as the body: (?P<c>curl --data-binary .+)$", r"请把文件本身作为请求体发送：\g<c>"),
    # pictures: the app's own lines (mnistkit.pictures, mnistkit.images), the board's original of a keep
    (r"empty image \(0 pixels\)", "空图片（0 个像素）"),
    (r"file not found; did you mean (?P<c>.+)\?$", r"找不到文件；你是想写 \g<c> 吗？"),  # cli.did_you_mean's
    (r"file not found", "找不到文件"),
    (r"cannot read image \(.*\)$", "无法读取这张图片（文件可能已损坏或不完整）"),
    (r"(?P<k>HEIC/HEIF|HEIC|HEIF) photo: convert it to JPG or PNG", r"\g<k> 照片：请转换成 JPG 或 PNG"),
    (r"an? [^:;]*?, not an image file Pillow can open; convert it to JPG or PNG",
     "不是 Pillow 能打开的图片文件；请转换成 JPG 或 PNG"),
    (r"an? (?P<f>[A-Z][A-Z0-9]*) [^:;,]*?, not an image file", r"是 \g<f> 文件，不是图片文件"),  # a PDF document
    (r"an? [^:;]*?, not an image file", "不是图片文件（是别的文件）"),
    (r"not an image file", "不是图片文件"),
    (r"the original is not a picture \([^)]*\)", "原图不是图片"),
    (r"picture of (?P<w>\d+)x(?P<h>\d+) pixels \([^)]*\) takes (?P<mb>[\d,]+) MB to read, over this app's limit "
     r"of (?P<most>[\d,]+) MB; save it smaller \(the app reads (?P<side>[\d,]+) pixels a side at most\) or as a JPEG",
     r"图片有 \g<w>x\g<h> 像素，读取要占 \g<mb> MB 内存，超过了应用的上限 \g<most> MB；请存成更小的图片"
     r"（应用每边最多读 \g<side> 像素）或存成 JPEG"),
    (r"no digit found", "没有找到数字"),
    (r"every pixel of the 28x28 input is (?P<v>\d+)", r"28x28 输入的每个像素都是 \g<v>"),
    (r"every pixel is (?P<v>\d+)", r"每个像素都是 \g<v>"),
    (r"nothing is clearly darker than the paper", "没有明显比纸更暗的笔迹"),
    (r"nothing stands out from the picture's noise", "没有从图片的噪点中突出的笔迹"),
    (r"ink covers most of the picture", "墨迹盖住了图片的大部分"),
    (r"only shading, no strokes that stand apart from the paper", "只有阴影，没有与纸分得开的笔画"),
    (r"only a frame or a border, nothing inside it", "只有边框，框里什么也没有"),
    (r"only specks, no mark large enough to be a digit", "只有小斑点，没有大到能算一个数字的笔迹"),
    (r"several digits found \((?P<d>\d+) side by side\)", r"找到了好几个数字（\g<d> 个并排）"),
    (r"several digits found \((?P<d>\d+) one above the other\)", r"找到了好几个数字（\g<d> 个上下排列）"),
    (r"several digits found \((?P<d>\d+) on (?P<l>\d+) lines\)", r"找到了好几个数字（\g<d> 个，分 \g<l> 行）"),
    (r"several digits found \(side by side\)", "找到了好几个数字（并排）"),
    (r"several digits found \(on (?P<l>\d+) lines\)", r"找到了好几个数字（分 \g<l> 行）"),
    (r"the app reads one digit per picture: crop to one digit", "应用每张图片只读一个数字：请裁剪到只剩一个数字"),
    (r"the app expects a dark digit on lighter paper", "应用要的是浅色纸上的深色数字"),
    (r"after the course's --threshold (?P<t>\d+)", r"（用课程的 --threshold \g<t> 之后）"),
    (r"try --preprocess mnist or another --threshold", "试试 --preprocess mnist 或换一个 --threshold"),
)]
KINDS = {400: "服务器读不了这个请求", 403: "服务器拒绝了这个请求（来源或主机名不对）", 404: "找不到",
         405: "不支持这种请求", 409: "现在做不了：模型文件夹或保存的数字的状态不允许", 413: "太大了，超过了服务器的上限",
         500: "服务器出错了", 503: "服务器暂时无法处理"}
# words that stay as they are in a zh line: names of formats, tools and networks
KEPT_WORDS = {"JPG", "JPEG", "PNG", "HEIC", "HEIF", "GET", "POST", "DELETE", "HTTP", "MNIST", "TFRecords", "Pillow",
              "LeNet", "SavedModel", "LiteRT", "tflite", "checkpoint", "global_step", "pid", "MB",
              "JSON"}
# what is a name, not a word: a phrase's group (marked), a `command`, a 'quoted name', a path, a flag, a number,
# a signal
NAME = re.compile(r"\x02[^\x03]*\x03|`[^`]*`|'[^']*'|[^\s\x02\x03]*[/\\._\-=\d][^\s\x02\x03]*|SIG[A-Z]+")


def asked(headers):
    """Whether a request (its headers: lower-case names) asks for the Chinese twins: its Accept-Language names zh."""
    return "zh" in headers.get("accept-language", "").lower()


def twin(line, status=400):
    """The Chinese of one error `line` (str) answered with HTTP `status` (int): its phrases in Chinese and its
    names kept (see the module's docstring); a line with a word PHRASES does not know: `<leading name>：<KINDS'
    sentence>（HTTP status）`, never English words."""
    said = phrased(line)
    if said is not None:
        return said
    shorter = re.sub(r" \([^()]*\)", "", line)  # its words said without the details in brackets (a script's own
    return twin(shorter, status) if shorter != line else by_kind(line, status)  # last line, an OS error)


def phrased(line):
    """The Chinese of `line` said whole by PHRASES (its names kept), or None when a word of it is left in English."""
    said = line.removeprefix("error: ")
    for english, chinese in PHRASES:
        said = english.sub(lambda found: found.expand(chinese.replace("\\g<", "\x02\\g<").replace(">", ">\x03")),
                           said)  # what a phrase's groups hold is a name: marked, so that no word of it counts
    said = said.replace("; ", "；").replace(": ", "：")
    return None if english_left(said, lead(line)) else re.sub("[\x02\x03]", "", said)


STAGES = {"preparing": "准备你的数字", "training": "训练", "checking": "检查", "promoting": "启用"}  # board.js's words


def running(stage, step, steps):
    """A running learn's line in Chinese when PHRASES cannot say its last line whole (a script's note, a tick): what
    the page shows of it, `正在学习 · <stage> · 第 <step> 步，共 <steps> 步` (the step part when both are known)."""
    parts = ["正在学习", STAGES.get(stage)] + ([f"第 {step} 步，共 {steps} 步"] if step is not None and steps else [])
    return " · ".join(part for part in parts if part)


def lead(line):
    """The name that leads a line (`<file or folder>: what is wrong`), or "" when it does not start with one."""
    first = line.removeprefix("error: ").split(": ", 1)
    return first[0] if len(first) == 2 and ", " not in first[0] and "; " not in first[0] else ""


def english_left(said, name=""):
    """Whether the Chinese `said` still holds an English word outside its names (a phrase PHRASES lacks)."""
    if name and said.startswith(name):
        said = said[len(name):]
    rest = NAME.sub(" ", said)
    return any(word not in KEPT_WORDS for word in re.findall(r"[A-Za-z]{2,}", rest))


def by_kind(line, status):
    """A line no phrase says whole: its leading name (when it names one without English words) and its kind."""
    name = lead(line)
    shown = f"{name}：" if name and not english_left(name) or "/" in name or "." in name else ""
    return f"{shown}{KINDS.get(status, '服务器拒绝了这个请求')}（HTTP {status}）"
