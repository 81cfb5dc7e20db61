"""gt.vision.models' DenseNet, SqueezeNet, MobileNetV2 and MobileNetV3 against torchvision's,
with no torch here: the numbers below were made by torchvision 0.29.2 under PyTorch 2.15 (CPU,
float64) from the same deterministic weights and inputs (_pattern, _inputs), so the test only
needs numpy.

- the state dict's keys (their SHA-256, joined by newlines) and the parameter count at 1000
  classes equal torchvision's, so its checkpoints load with strict=True;
- float32 outputs in eval and train mode (BatchNorm on the batch's statistics) and the running
  statistics after one train step match to 1e-4 (outputs) of their largest magnitude;
- float64 gradients of the input and of three parameters (first, middle, last weight) after a
  backward of (output * r).sum(), in eval and in train mode, match to 1e-7 (they are compared in
  float64 because in float32 ReLU kinks and train-mode BatchNorm over a few values make the
  gradients of these deep nets differ by up to 1e-2 between any two float32 implementations,
  torchvision's own float32 included).
"""
import hashlib
import importlib

import numpy as np
import pytest

import gt
from gt import nn

_FILES = {"densenet": "densenet", "squeezenet": "squeezenet", "mobilenet_v2": "mobilenetv2",
          "mobilenet_v3": "mobilenetv3"}
MODS = {f: importlib.import_module("gt.vision.models." + f) for f in _FILES.values()}


def _builder(name):
    return getattr(MODS[next(v for k, v in _FILES.items() if name.startswith(k))], name)


def _uniform(n, seed):
    """n deterministic pseudo-random numbers in [-1, 1): splitmix64 of seed * 2^32 + 0, 1, ..."""
    with np.errstate(over="ignore"):
        z = (np.arange(n, dtype=np.uint64) + np.uint64(seed) * np.uint64(1 << 32)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 52) - 1.0


def _pattern(key, shape, j):
    """A deterministic value for state-dict entry number j (float32 values, as float64)."""
    n = int(np.prod(shape)) if shape else 1
    u = _uniform(n, j + 1)
    if key.endswith("num_batches_tracked"):
        return None
    if key.endswith("running_mean"):
        v = 0.1 * u
    elif key.endswith("running_var"):
        v = 1.0 + 0.2 * u * u
    elif len(shape) == 1 and key.endswith("weight"):      # a BatchNorm's scale
        v = 1.0 + 0.1 * u
    elif len(shape) == 1:                                 # biases
        v = 0.1 * u
    else:                                                 # conv / linear weights, variance ~ 1/fan_in
        fan_in = n // shape[0]
        v = u * np.sqrt(6.0 / fan_in)
    return v.astype(np.float32).astype(np.float64).reshape(shape)


def _pattern_state(keys_shapes):
    return {k: _pattern(k, s, j) for j, (k, s) in enumerate(keys_shapes)}


def _inputs():
    x = (1.7 * _uniform(2 * 3 * 64 * 64, 0)).reshape(2, 3, 64, 64).astype(np.float32).astype(np.float64)
    r = np.cos(0.53 * np.arange(2 * 10)).reshape(2, 10)
    return x, r


def _proj(a):
    """(sum a*cos(0.3 i), sum |a|) of a flattened float64 array."""
    a = np.asarray(a, np.float64).ravel()
    return [float((a * np.cos(0.3 * np.arange(a.size))).sum()), float(np.abs(a).sum())]


def _keys_digest(keys):
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


# torchvision 0.29.2's numbers (float64) for _pattern's weights and _inputs; y at 10 classes, grads and
# running as _proj pairs (gradients: input, then REF['pick'] in order).
REF = {
    'densenet121': {
        'n_keys': 727,
        'digest': '366ea3ff24f18b7cc9996c31900a69ed5d2966aadbf7f96b444bce8a1825123e',
        'n_params': 7978856,
        'pick': ['features.conv0.weight', 'features.denseblock3.denselayer11.conv2.weight', 'classifier.weight'],
        'f64_eval_y': [
            [-2.4749361508761267, 0.3944425734982433, -0.12330018915948421, 1.5774628113622233, -0.01298048847872868,
             0.9194320553359562, -0.22491596056068291, 0.47504106280584074, 0.2560626683565415, -0.11055022012963545],
            [-2.4956910082359167, 0.4196944968200492, -0.05378363845444262, 1.5204087771671504, -0.015066821723211943,
             0.9612932065601136, -0.2999221807418336, 0.5138627556357526, 0.30758533428164947, -0.0540790860217224],
        ],
        'f64_eval_grads': [
            0.08663054351454046, 25.010821348588482, 0.7606305844267914, 167.74665468879044, 4.660134299305497,
            894.3643205467279, 8.472662628916648, 5563.736150163208
        ],
        'f64_train_y': [
            [-0.9244655342288992, -0.3317267583830393, 0.19259503405356382, 1.6197818931962582, 1.0013856176156395,
             0.7199181597072183, -0.013404404142251192, 0.46722789469413195, 0.10662368894075103, -0.23535906015934804],
            [-1.0825366222848691, -0.024474142598243917, 0.06368014244208609, 0.8383492380875981, 0.07755922756740617,
             0.49849403809937276, 0.5770947799864586, 0.22905375345729542, -0.3128651967770456, 0.13808574881366292],
        ],
        'f64_train_grads': [
            20.452440084641815, 2861.4380352622256, -213.1788545717733, 15812.998484025477, -5.309653276555692,
            1699.348285174376, -29.960240164252014, 5290.296293416502
        ],
        'f64_running': [
            30.250711449994892, 44511.99438366374
        ],
    },
    'densenet161': {
        'n_keys': 967,
        'digest': '605b77e4d262e9c8374a003f76dd11899953ca84fc40bbeaa2d541f66bd79fc0',
        'n_params': 28681000,
        'pick': ['features.conv0.weight', 'features.denseblock3.denselayer21.conv2.weight', 'classifier.weight'],
        'f64_eval_y': [
            [0.8561685906291722, 1.584645127988297, -0.10155117762104338, -0.6833525005711427, -2.505410816555294,
             0.6915275977676332, -0.311431988256642, -0.6831100540464419, 1.0792222137400604, 0.40683739488751625],
            [0.8366040784015827, 1.5648313817021302, -0.10268463883534418, -0.669302813068524, -2.4719591609167533,
             0.6328081323409394, -0.29364594590664445, -0.6994583550731066, 1.065923016172113, 0.4263954928927285],
        ],
        'f64_eval_grads': [
            0.01532609335466852, 26.079242910238467, -0.6570546959283483, 205.503995252788, 5.855813542368595,
            2227.1670273012423, -1.4580749647297413, 11935.28202643245
        ],
        'f64_train_y': [
            [1.214836158454072, 0.049873972794506505, 0.21795839156067587, 0.0680988874802157, -0.8677941447439111,
             0.14233987243674157, -0.020247932525849693, -0.4226070064732286, -0.21890827276351577,
             -1.1288391678737828],
            [0.6627582506892158, 0.08995286698813776, 1.2045186419932978, -0.7740251239816539, 0.4137422500896391,
             0.8171495820305642, -0.451809008241371, -0.5170543279583084, 0.6871556554497916, -0.5816289694191192],
        ],
        'f64_train_grads': [
            25.443245968164703, 4624.146237843628, -407.7719541935633, 30940.743467190503, 16.245909414140023,
            3514.754287214133, -0.771797473814587, 11497.075152573674
        ],
        'f64_running': [
            45.75025041471035, 116735.27301597432
        ],
    },
    'densenet169': {
        'n_keys': 1015,
        'digest': 'f692958fb53c2a7ae737d720b503bc84e66fc83d71d3109f97aa7d4ddf145b46',
        'n_params': 14149480,
        'pick': ['features.conv0.weight', 'features.denseblock3.denselayer23.conv2.weight', 'classifier.weight'],
        'f64_eval_y': [
            [0.6543575903392596, 0.08348561968630919, -0.20458818870724366, -0.35490097765651624, 0.5181173539118789,
             0.5916289215552807, 0.34974933788240903, 0.1057289982730214, -0.2996616219852526, 0.19136925318229892],
            [0.6396800208986961, 0.14995844665198527, -0.18981088890586517, -0.3861583637001926, 0.5505114736556522,
             0.6159728786601909, 0.38753711578809846, 0.14733929181835048, -0.31635513272243276, 0.20907808659302474],
        ],
        'f64_eval_grads': [
            0.1303391962680851, 22.1171959717348, -0.39251717066825975, 146.8380113518071, 1.8374535123177491,
            856.2709702733898, 1.1239225650012372, 7494.982829255065
        ],
        'f64_train_y': [
            [-0.24418548287523428, 0.05707269464599757, -0.31600655691325163, 0.41051914501511505,
             -0.23076481599525994, 0.35010773431935444, -0.06451298782654002, -0.49543468482173325,
             -0.2805005904848801, 0.20099881443079182],
            [-0.31472739992361887, 0.7085321016158586, 0.19922278843041927, -0.26653545393216077, 0.14316813903908818,
             0.7147610107088012, -0.4478048500401207, -1.7159539409976297, -0.27462432316456675, -0.31131726592232034],
        ],
        'f64_train_grads': [
            -61.197700369811635, 4751.582673587989, 40.27527389829129, 25747.319751181127, 9.915260402314708,
            2013.0126897673824, 1.4837461495932351, 8641.894166064772
        ],
        'f64_running': [
            17.907612951901964, 83944.01738433959
        ],
    },
    'densenet201': {
        'n_keys': 1207,
        'digest': '8f1c477b4b83842c55d84b48de0844ea98fed31fe650e42fbf6b1ee55ff8c179',
        'n_params': 20013928,
        'pick': ['features.conv0.weight', 'features.denseblock3.denselayer31.conv2.weight', 'classifier.weight'],
        'f64_eval_y': [
            [-0.9876708204564887, -0.2950952467831788, 0.6500260500723479, -0.4508303529353054, 2.000158610057117,
             0.23202674497435766, -1.8821970064688744, -1.0525870241030033, 0.13122211172684972, 0.5200756204393732],
            [-1.0229224774851493, -0.3256294791250792, 0.6455437887143433, -0.48722716586905856, 1.985571259529172,
             0.2241811499279978, -1.9311730261419928, -1.063884815960207, 0.10912870390963725, 0.5547997452706147],
        ],
        'f64_eval_grads': [
            0.018966513520099912, 21.19992833433045, 0.3213434278938614, 134.75223895260865, 7.471833388524475,
            686.4541125200295, 4.803994553225666, 8948.43325774296
        ],
        'f64_train_y': [
            [0.48295434807294124, 0.5847058723963794, 0.7020919554424062, -0.274620792707608, 0.43694931598912157,
             -0.05919403367992143, -0.8095448300490043, 0.3863241659446938, -0.09381329358621315, -0.2916783515810353],
            [-1.0706572378220285, 0.5966617851958862, 0.4580753095876638, 0.47744065701122285, 0.13908671876496176,
             0.07518073891955934, -1.0672890958413037, -0.4731547544328741, 0.16213190256965115, 0.20772657165210973],
        ],
        'f64_train_grads': [
            -1.081411058693881, 5210.012897768678, -45.32765029359936, 28839.957255184763, -9.197040350119945,
            1597.6038713587502, 5.115495531058393, 9954.43028888094
        ],
        'f64_running': [
            33.588172814402434, 121427.06248668817
        ],
    },
    'squeezenet1_0': {
        'n_keys': 52,
        'digest': '7755c72f17139c58fcd1002dde93a948bbf0aaf3b788290996344026f18b7a8d',
        'n_params': 1248424,
        'pick': ['features.0.weight', 'features.8.squeeze.weight', 'classifier.1.weight'],
        'f64_eval_y': [
            [2.510389620637283, 0.7442302701657004, 2.8020497410558027, 3.622486129610326, 0.0744906349475894, 0.0,
             0.0, 0.0, 2.711187789711536, 3.079654634627701],
            [2.3183613428615386, 0.6395773907610971, 2.642658041810387, 3.410806675001278, 0.07073629248721829, 0.0,
             0.0, 0.0, 2.400484335933472, 3.0159821194694527],
        ],
        'f64_eval_grads': [
            -0.6528890460714969, 154.1615325752744, 2.030451581138076, 1147.1404405090184, -43.137218197739315,
            1571.651386112682, 38.141105570945314, 4337.371236240532
        ],
        'f64_train_y': [
            [2.510389620637283, 0.7442302701657004, 2.8020497410558027, 3.622486129610326, 0.0744906349475894, 0.0,
             0.0, 0.0, 2.711187789711536, 3.079654634627701],
            [2.3183613428615386, 0.6395773907610971, 2.642658041810387, 3.410806675001278, 0.07073629248721829, 0.0,
             0.0, 0.0, 2.400484335933472, 3.0159821194694527],
        ],
        'f64_train_grads': [
            -0.6528890460714969, 154.1615325752744, 2.030451581138076, 1147.1404405090184, -43.137218197739315,
            1571.651386112682, 38.141105570945314, 4337.371236240532
        ],
        'f64_running': [],
    },
    'squeezenet1_1': {
        'n_keys': 52,
        'digest': '615028f24286f138638dc30b318d4b2130830e48f16d6298df699f63b3e72745',
        'n_params': 1235496,
        'pick': ['features.0.weight', 'features.9.squeeze.weight', 'classifier.1.weight'],
        'f64_eval_y': [
            [1.8502622614917936, 0.8757900240163407, 0.9298090862509009, 1.9714364385726226, 0.2691714315613221, 0.0,
             0.0, 0.011724908631173703, 2.1954894842625254, 2.0430891756727925],
            [1.876598006850463, 0.9671262945149732, 0.8878818535810148, 2.1362548582828724, 0.34139104010664467, 0.0,
             0.0, 0.049686819440565966, 2.2731414906864673, 2.097951319774464],
        ],
        'f64_eval_grads': [
            -1.1791305378485384, 89.61434770689539, 3.250080812518913, 104.65092732189444, -12.7773181664802,
            1117.03703577015, 18.881741031838168, 2700.7068668953248
        ],
        'f64_train_y': [
            [1.8502622614917936, 0.8757900240163407, 0.9298090862509009, 1.9714364385726226, 0.2691714315613221, 0.0,
             0.0, 0.011724908631173703, 2.1954894842625254, 2.0430891756727925],
            [1.876598006850463, 0.9671262945149732, 0.8878818535810148, 2.1362548582828724, 0.34139104010664467, 0.0,
             0.0, 0.049686819440565966, 2.2731414906864673, 2.097951319774464],
        ],
        'f64_train_grads': [
            -1.1791305378485384, 89.61434770689539, 3.250080812518913, 104.65092732189444, -12.7773181664802,
            1117.03703577015, 18.881741031838168, 2700.7068668953248
        ],
        'f64_running': [],
    },
    'mobilenet_v2': {
        'n_keys': 314,
        'digest': '398e13a521d3fbb9b8658ea6e7b02f47e7a3625a8991749ed1c2d25ae6571b5e',
        'n_params': 3504872,
        'pick': ['features.0.0.weight', 'features.9.conv.3.weight', 'classifier.1.weight'],
        'f64_eval_y': [
            [0.4527801038908792, -0.6523028245863183, -1.3337238059178733, -4.148651109838262, 1.250628828792403,
             -1.305292471242741, 3.2259321868380293, -2.172369674591619, -4.369158702270879, -2.6330983841175537],
            [-0.02055362522203863, -0.23595906033093184, -1.3150670242509073, -2.6166984845449703, 1.2668310966745464,
             -0.9488268661177709, 2.745049270133534, -2.6340091995282258, -2.9874520328318623, -3.6883690554585282],
        ],
        'f64_eval_grads': [
            -1.741502193087289, 4571.704394433504, 39.99228743773546, 3055.9921333507623, -1.5304473183926253,
            68.42855144320498, 241.79358539516883, 18136.500939734455
        ],
        'f64_train_y': [
            [0.9704294805695644, 0.24328722314012963, 0.5367832065481766, 0.20200487201867745, -1.0707482584995003,
             0.7872492036203754, 0.4055172482652699, -0.6028669968642648, -0.7351252921737984, -1.0129531251152775],
            [0.3902510616647052, -1.3194299290962026, 0.8879226406622951, -0.25299446742505804, -0.17087430269277376,
             0.411389939611594, 0.42347804409469625, 0.055538072913112246, -0.9083888359197192, -0.7833383619235681],
        ],
        'f64_train_grads': [
            -123.10626919482745, 22194.062272431278, 475.2382381275647, 15896.865102357766, 3.8000266574552475,
            76.2439657327069, 7.6739091430765995, 6671.1499231674625
        ],
        'f64_running': [
            -37.73790373561094, 21202.0535433353
        ],
    },
    'mobilenet_v3_small': {
        'n_keys': 244,
        'digest': '5b6a84aa34c8d9669d69df18902ef7448ac60f1cd587741e54447e73909a0859',
        'n_params': 2542856,
        'pick': ['features.0.0.weight', 'features.7.block.0.1.weight', 'classifier.3.weight'],
        'f64_eval_y': [
            [-0.06830332031689529, 0.10645592266019491, -0.04442365833416351, 0.23139245421449095,
             0.04666145188256576, -0.18286993731964427, -0.008548095742332507, 0.13696836504123233,
             0.05738014781914827, -0.251586620591963],
            [-0.06513885640687303, 0.11138698480687934, -0.03937128689189158, 0.24646177100099856,
             0.039071596927049576, -0.17949723727414882, 0.018219255952514, 0.11966361154926203, 0.05804507382272214,
             -0.2585498361340386],
        ],
        'f64_eval_grads': [
            0.024933835278069687, 7.760325762772538, 0.4100844689545967, 4.56129204627401, -0.1643773916340642,
            0.7748118418791994, -5.554342450753229, 776.2565659111592
        ],
        'f64_train_y': [
            [-0.142738244661352, -0.2865930255146224, 0.31957404881834894, 0.31816362091899186, -0.16354509080574997,
             -0.2398977723197104, -0.30758434003270324, 0.23971077676244334, -0.007949722141030374,
             -0.16795404690070972],
            [0.13853928153569117, -0.26010970068248784, 0.10982741778483962, 0.14350241196213231,
             -0.18733751448676378, -0.36320792490872483, 0.3021725584521254, 0.031332351119229024,
             0.04869928998069972, -0.22860875385407048],
        ],
        'f64_train_grads': [
            -1.5871428653114563, 755.2441611364426, -15.314978173415842, 409.85138648184784, 0.21595464539044532,
            4.786264517231558, -4.782016182879939, 1599.4394206003499
        ],
        'f64_running': [
            0.972012306098307, 6818.231135985327
        ],
    },
    'mobilenet_v3_large': {
        'n_keys': 312,
        'digest': '7f46c20ffecaacab02018f20373fdafeece666fbc51b098168b77e5872ea6d1f',
        'n_params': 5483032,
        'pick': ['features.0.0.weight', 'features.9.block.1.0.weight', 'classifier.3.weight'],
        'f64_eval_y': [
            [49.24709676777009, -20.48701509985133, 11.640496496164705, -24.318953178427797, 10.477887190275931,
             7.423041079391543, -3.942587924790284, 16.32305712539318, -27.941879944045287, 8.429633592116328],
            [55.86346717559243, -27.67441750930173, 9.115907664146954, -21.50226707780461, 12.103985798136417,
             0.26498382705550405, 1.0061601528569608, 10.94148493322314, -22.08010524516673, 5.445388922413631],
        ],
        'f64_eval_grads': [
            21.3956251708414, 6176.556164126295, -105.1569669691339, 3492.814813474546, 207.09488882181216,
            4515.97035546763, 4754.809734802711, 87446.1703602963
        ],
        'f64_train_y': [
            [0.3311372000036993, -0.2980591289855371, -0.20566452216394743, 0.06049919210154657, 0.14838253388998995,
             -0.06123975341992027, 0.06825232745542836, 0.06478409523427135, 0.1787453493063128, -0.2742139538132126],
            [0.9149576060294866, 0.023247601259749937, 0.4092946327343421, -0.17277419250518958, -0.23966785842352026,
             -0.08427625503701479, 0.30557493192592633, -0.11995265443497329, -0.4451228724464602, 0.23845870442172418],
        ],
        'f64_train_grads': [
            7.915445058049932, 1437.0099564855564, 23.95744434640618, 721.7694254958201, 0.7020386074999376,
            77.44591262737248, 82.45051003068573, 1977.7008820180224
        ],
        'f64_running': [
            -4.192192874675522, 13774.57123748475
        ],
    },
}


def _run(name, dtype, mode):
    """The model at 10 classes with the pattern's weights in `dtype`: (output, gradient
    summaries, running statistics summary) after a backward of (output * r).sum()."""
    model = _builder(name)(num_classes=10)
    state = model.state_dict()
    pattern = _pattern_state([(k, tuple(v.shape)) for k, v in state.items()])
    model.load_state_dict({k: state[k] if v is None else gt.tensor(v.astype(np.float32)) for k, v in pattern.items()},
                          strict=True)
    if dtype == "float64":
        model = model.double()
    model.train(mode == "train")
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.eval()
    x, r = _inputs()
    x = gt.tensor(x.astype(dtype)).requires_grad_(True)
    y = model(x)
    (y * gt.tensor(r.astype(dtype))).sum().backward()
    params = dict(model.named_parameters())
    grads = _proj(x.grad.numpy()) + sum((_proj(params[p].grad.numpy()) for p in REF[name]["pick"]), [])
    state = model.state_dict()
    running = [k for k in state if k.endswith(("running_mean", "running_var"))]
    stats = _proj(np.concatenate([state[k].numpy().ravel() for k in running])) if running else []
    return y.detach().numpy().astype(np.float64), np.array(grads), np.array(stats)


def _close(got, want, rtol, what):
    want = np.asarray(want, np.float64)
    err = np.abs(np.asarray(got, np.float64) - want).max() / np.abs(want).max()
    assert err <= rtol, f"{what}: max |got - want| / max |want| = {err:.2e} > {rtol:.0e}"


@pytest.mark.parametrize("name", sorted(REF))
def test_state_dict_keys_and_parameter_count_are_torchvisions(name):
    model = _builder(name)()
    keys = list(model.state_dict().keys())
    assert len(keys) == REF[name]["n_keys"]
    assert _keys_digest(keys) == REF[name]["digest"]
    assert sum(p.numel() for p in model.parameters()) == REF[name]["n_params"]
    assert tuple(model.eval()(gt.zeros(1, 3, 64, 64)).shape) == (1, 1000)


@pytest.mark.parametrize("name", sorted(REF))
def test_float32_outputs_and_batchnorm_statistics_match_torchvision(name):
    for mode in ("eval", "train"):
        y, _, stats = _run(name, "float32", mode)
        assert y.shape == (2, 10)
        _close(y, REF[name][f"f64_{mode}_y"], 1e-4, f"{name} {mode} output")
    if REF[name]["f64_running"]:
        _close(stats, REF[name]["f64_running"], 1e-5, f"{name} running statistics after a train step")


@pytest.mark.parametrize("name", sorted(REF))
def test_float64_gradients_match_torchvision(name):
    for mode in ("eval", "train"):
        y, grads, _ = _run(name, "float64", mode)
        _close(y, REF[name][f"f64_{mode}_y"], 1e-9, f"{name} {mode} float64 output")
        want = np.asarray(REF[name][f"f64_{mode}_grads"]).reshape(-1, 2)
        # each pair is (projection, sum of |g|): both compared to the sum of |g|
        err = (np.abs(grads.reshape(-1, 2) - want) / want[:, 1:]).max()
        assert err <= 1e-7, f"{name} {mode} gradients: {err:.2e}"


def test_builders_take_torchvisions_arguments():
    half = _builder("mobilenet_v2")(width_mult=0.5, num_classes=3)
    assert half.features[0][0].out_channels == 16 and half.last_channel == 1280 and half.classifier[1].out_features == 3
    assert _builder("mobilenet_v2")(dropout=0.1).classifier[0].p == 0.1
    small = _builder("mobilenet_v3_small")(width_mult=0.75, reduced_tail=True, dilated=True, dropout=0.3)
    assert small.classifier[2].p == 0.3 and small.features[0][0].out_channels == 16
    assert small.features[-1][0].out_channels == 240 and small.features[-2].block[1][0].dilation == (2, 2)
    dense = _builder("densenet121")(memory_efficient=True, drop_rate=0.0, num_classes=4).eval()
    x = gt.tensor(np.asarray(_inputs()[0][:1], np.float32)).requires_grad_(True)
    dense(x).sum().backward()
    assert x.grad is not None and tuple(dense(x).shape) == (1, 4)
    assert _builder("squeezenet1_1")(dropout=0.2).classifier[0].p == 0.2
    with pytest.raises(ValueError, match="Unsupported SqueezeNet version"):
        MODS["squeezenet"].SqueezeNet("1_2")
    with pytest.raises(ValueError, match="Unsupported model type"):
        MODS["mobilenetv3"]._mobilenet_v3_conf("mobilenet_v3_medium")


def test_densenet_loads_torchvisions_old_checkpoint_keys(tmp_path, monkeypatch):
    """torchvision's DenseNet checkpoints name dense layers' modules "norm.1", "conv.2", ... and
    have no num_batches_tracked: weights= renames them and fills those in (0) before the strict
    load, as torchvision and PyTorch's BatchNorm do."""
    from gt import hub
    from gt.vision.models import _weights
    monkeypatch.setenv("GT_HUB_DIR", str(tmp_path))

    def no_network(url, dst, hash_prefix=None, progress=True):
        raise RuntimeError(f"gt.hub: downloading {url} failed: no network")
    monkeypatch.setattr(hub, "download_url_to_file", no_network)
    gt.manual_seed(0)
    source = _builder("densenet121")().eval()
    import re
    # as torchvision's files: "norm.1.weight", ..., and no num_batches_tracked (PyTorch < 0.4.1)
    old = {re.sub(r"(denselayer\d+\.(?:norm|conv))([12])\.", r"\1.\2.", k): v for k, v in source.state_dict().items()
           if not k.endswith("num_batches_tracked")}
    assert "features.denseblock1.denselayer1.norm.1.weight" in old
    (tmp_path / "checkpoints").mkdir()
    gt.save(old, str(tmp_path / "checkpoints" / "densenet121-a639ec97.pth"))
    x = gt.tensor(np.asarray(_inputs()[0][:1], np.float32))
    expected = source(x).numpy()
    for weights in ("DEFAULT", _weights.BY_MODEL["densenet121"].IMAGENET1K_V1):
        np.testing.assert_array_equal(_builder("densenet121")(weights=weights).eval()(x).numpy(), expected)
    np.testing.assert_array_equal(_builder("densenet121")(pretrained=True).eval()(x).numpy(), expected)
    with pytest.raises(ValueError, match="1000 classes, not num_classes=10"):
        _builder("densenet121")(weights="DEFAULT", num_classes=10)
    with pytest.raises(RuntimeError, match="densenet161-8d451a50.pth failed"):
        _builder("densenet161")(weights="DEFAULT")


def test_weights_enums_match_torchvisions():
    from gt.vision.models import _weights
    W = _weights.BY_MODEL
    assert W["mobilenet_v2"].DEFAULT is W["mobilenet_v2"].IMAGENET1K_V2
    assert W["mobilenet_v2"].DEFAULT.url == "https://download.pytorch.org/models/mobilenet_v2-7ebf99e0.pth"
    assert W["mobilenet_v2"].DEFAULT.transforms().resize_size == [232]
    assert W["mobilenet_v3_large"].IMAGENET1K_V1.url.endswith("mobilenet_v3_large-8738ca79.pth")
    assert W["mobilenet_v3_small"].DEFAULT.meta == {"num_params": 2542856, "min_size": (1, 1)}
    assert W["squeezenet1_0"].DEFAULT.meta["min_size"] == (21, 21)
    assert W["densenet201"].DEFAULT.url.endswith("densenet201-c1103571.pth")
    for name in REF:
        assert W[name].DEFAULT.meta["num_params"] == REF[name]["n_params"]
