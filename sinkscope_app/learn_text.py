"""Every word of the Learn walk-through, in English and in Spanish.

Each language is written for its readers, not translated line by line; both say the same
mathematics. Texts are Markdown with ``{named}`` fields that the page fills with live
numbers from the engine (the tests check that both languages use the same fields).
Streamlit renders ``$…$`` as LaTeX.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LANGS = {"en": "English", "es": "Español"}
DEFAULT_LANG = "en"


@dataclass(frozen=True)
class Step:
    """One step: a title, a short text, the formula behind it, and its own words.

    Attributes:
        title: a short title. body: the text (Markdown, with ``{fields}``).
        math: the same idea in symbols (Markdown with LaTeX), shown on request.
        words: the step's control labels, captions and figure titles.
    """

    title: str
    body: str
    math: str
    words: dict[str, str] = field(default_factory=dict)


def percent(x: float, lang: str) -> str:
    """x (a share, 0..1) as a percentage the way each language writes it: 45% / 45 %."""
    p = 100 * float(x)
    if p < 5e-7:
        s = "0"
    elif p < 1:
        s = f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"
    else:
        s = f"{p:.0f}" if p >= 10 else f"{p:.1f}"
    if lang == "es":
        return s.replace(".", ",") + "\u00a0%"
    return s + "%"


# --------------------------------------------------------------------------- English
UI_EN = {
    "page_title": "Learn · sinkscope",
    "heading": "From clouds of points to the Sinkhorn Transformer",
    "subtitle": "A guided walk in eight steps: one idea, one live picture each. "
                "Use the arrow keys ← → or the buttons.",
    "back": "← Back",
    "next": "Next →",
    "step_of": "Step {i} of {n}",
    "jump": "Go to step",
    "language": "Language",
    "presenter": "Presenter mode",
    "presenter_help": "Larger type and figures, for a projector.",
    "in_symbols": "In symbols",
    "half_step": "half-step",
    "half_steps": "half-steps",
    "shift": "Move cloud B",
    "shift_help": "Slide cloud B left or right; its shape and masses stay.",
    "main_link": "sinkscope: the main views",
    "sidebar_texts": "Your texts (steps 6–8)",
    "example": "Example",
    "custom": "Your own texts",
    "text_a": "Text A",
    "text_b": "Text B",
    "text_help": "Press Ctrl+Enter or click outside the box to apply.",
    "model_note": "The model, all-MiniLM-L6-v2, learnt mostly from English text.",
    "loading": "Reading your texts with the model (the first time takes a few seconds)…",
    "bad_step": "There is no step {raw} (the walk has steps 1 to {n}); showing step {step}.",
    "bad_lang": "Unknown language {raw} in the link; showing English. Languages: en, es.",
    "bad_preset": "Unknown cloud shape {raw} in the link; showing {preset}.",
    "bad_shift": "The shift of cloud B must be a number from {lo} to {hi}; got {raw}, "
                 "using {shift}.",
    "bad_ex": "Unknown example {raw} in the link; showing the default pair.",
    "text_cut": "Text {name} in the link had {n} characters; only the first {kept} are kept.",
    "bad_present": "present must be on or off, got {raw}; presenter mode is off.",
    "error": "This step could not be drawn: {error}",
    "too_long": "Text A has {n} tokens: this step shows every layer and head of the text "
                "with itself, so it takes at most {most}. Shorten text A in the sidebar.",
    "done": "That is the whole walk. Open your texts in the main views to explore every "
            "layer and head.",
}

WORDS_EN = {  # what the figures say (see viz.learn.WORDS)
    "cloud_a": "cloud A", "cloud_b": "cloud B", "mass": "mass", "zero": "weighs 0",
    "receives_verb": "receives", "sends_verb": "sends", "weighs": "weighs",
    "over": "too much", "under": "left alone", "on": "just right",
    "plan": "plan", "exact": "exact transport (ot.emd)", "weight_tick": "its weight",
    "received_title": "What each point of B receives", "sent_title": "What each point of A sends",
    "attention": "attention received", "per_head": "one head", "coupling": "coupling",
    "token": "token",
}
WORDS_TEXT_EN = dict(WORDS_EN, received_title="What each token of B receives",
                     sent_title="What each token of A sends")

PRESETS_EN = {"clusters": "Two clusters", "outlier": "An outlier",
              "shifted": "The same cloud, shifted", "unequal": "Unequal sizes"}

STEPS_EN = (
    Step(
        title="A text is a cloud of dust",
        body=(
            "Picture a sentence as a pinch of dust blown into the air. Every token is a grain "
            "sitting somewhere in space, and every grain carries a little mass; together "
            "they weigh exactly 1. A short sentence is a small cloud, a book a huge one, and "
            "the mathematics treats both the same way.\n\n"
            "Here the space is a flat sheet, so you can see it: cloud **A** in blue, cloud "
            "**B** in orange, each point as big as its mass. In a real transformer the space "
            "has hundreds of dimensions; nothing else changes.\n\n"
            "Try the shapes, and drag cloud B around. The question for the rest of the walk: "
            "**how should the grains of A pair up with the grains of B?**"),
        math=(
            "A text is a probability measure, one atom per token:\n\n"
            "$$\\mu = \\sum_{i=1}^{n} a_i\\,\\delta_{x_i}, \\qquad a_i \\ge 0, "
            "\\quad \\sum_i a_i = 1.$$\n\n"
            "Here $x_i \\in \\mathbb{R}^2$; in the model, $x_i \\in \\mathbb{R}^{384}$."),
        words={"shape": "Shape of the clouds",
               "title": "{preset} · n = {n} points in A, m = {m} in B"},
    ),
    Step(
        title="Softmax: every point chooses by closeness",
        body=(
            "Attention answers the question one grain at a time. Each point of A takes its "
            "mass and spreads it over B, giving more to the points that are close. Closer "
            "means cheaper, and the share drops exponentially as the cost grows. That is "
            "softmax.\n\n"
            "Every point of A sends exactly what it weighs. But nobody asks B. The bars on "
            "the right show what each point of B receives against what it weighs (the black "
            "tick). {summary}\n\n"
            "Move cloud B: the points of B facing A grab almost everything, and the far side "
            "is left alone."),
        math=(
            "With scores $S_{ij} = -\\tfrac12\\lVert x_i - y_j\\rVert^2$ (the cost is "
            "$-S$) and temperature $\\varepsilon = 1$:\n\n"
            "$$\\pi^{(1)}_{ij} = a_i\\,\\frac{e^{S_{ij}/\\varepsilon}}"
            "{\\sum_k e^{S_{ik}/\\varepsilon}}.$$\n\n"
            "Rows are right, $\\sum_j \\pi^{(1)}_{ij} = a_i$; columns are not: "
            "$\\sum_i \\pi^{(1)}_{ij} \\ne b_j$ in general."),
        words={"summary": "Right now **{over}** receives {over_got} while it weighs "
                          "{over_w}, and **{under}** gets only {under_got}.",
               "summary_even": "Right now every point of B happens to receive about its weight.",
               "title": "Softmax at ε = 1: A spreads its mass over B by closeness"},
    ),
    Step(
        title="The other half: fix the columns too",
        body=(
            "Softmax fixed the rows: each point of A sends what it weighs. Now fix the "
            "columns: rescale whatever reaches each point of B so that it receives exactly "
            "its weight. That knocks the rows slightly out of line, so fix them again, then "
            "the columns again… Each fix is a **half-step**, and this back-and-forth is "
            "Sinkhorn's algorithm.\n\n"
            "Press **Next half-step** and watch the bars. Odd half-steps put A's bars on "
            "their ticks, even ones B's. After enough rounds (a few for most shapes, dozens for "
            "the two clusters) both sides are right at once, and the plan has become a "
            "**coupling**: a way to pair A with B in which nobody sits "
            "out and nobody dances more than their share.\n\n{status}"),
        math=(
            "Half-step $t$ rescales rows when $t$ is odd and columns when $t$ is even:\n\n"
            "$$\\pi \\leftarrow \\operatorname{diag}\\!\\Big(\\frac{a}{\\pi\\mathbf 1}\\Big)\\,"
            "\\pi, \\qquad \\pi \\leftarrow \\pi\\,\\operatorname{diag}\\!\\Big("
            "\\frac{b}{\\pi^{\\top}\\mathbf 1}\\Big).$$\n\n"
            "Half-step 1 is softmax. The limit is the coupling $\\pi \\in \\Pi(a, b)$: "
            "$\\pi\\mathbf 1 = a$ and $\\pi^{\\top}\\mathbf 1 = b$ (Sinkhorn, 1964)."),
        words={"next_half": "Next half-step", "counter": "Half-steps so far",
               "counter_help": "Type 1 to start again, or any number to jump there.",
               "rows": "rows", "columns": "columns",
               "status": "**Half-step {t}** ({side} just fixed): {row_off} of the mass is "
                         "in the wrong place on A's side, {col_off} on B's.",
               "settled": "**Half-step {t}**: less than {tol} of the mass is out of place "
                          "on either side. The plan is a coupling.",
               "title": "After {t} {hs} at ε = 1"},
    ),
    Step(
        title="ε: from everyone-with-everyone to exact transport",
        body=(
            "Softmax and Sinkhorn both have a temperature, **ε**: it says how much the cost "
            "matters.\n\n"
            "With ε large the cost hardly counts. Everyone partners everyone, in proportion "
            "to their masses: the product a ⊗ b, the most spread-out coupling there is. With "
            "ε small the cost is all that counts, and the coupling becomes the **exact "
            "optimal transport** plan: the cheapest way to carry cloud A onto cloud B, where "
            "every grain of B still gets its share.\n\n"
            "Lines join partners; the wider the line, the more mass they share. The dashed "
            "pink lines are the exact plan, computed separately with POT's network simplex "
            "(`ot.emd`). {status}"),
        math=(
            "$$\\pi_\\varepsilon = \\arg\\min_{\\pi \\in \\Pi(a,b)} \\langle C, \\pi\\rangle "
            "- \\varepsilon H(\\pi), \\qquad H(\\pi) = -\\sum_{ij} \\pi_{ij}\\log\\pi_{ij}.$$\n\n"
            "$\\pi_\\varepsilon \\to a \\otimes b$ as $\\varepsilon \\to \\infty$ and "
            "$\\pi_\\varepsilon \\to \\pi^\\star = "
            "\\arg\\min_{\\Pi(a,b)} \\langle C, \\pi\\rangle$ "
            "as $\\varepsilon \\to 0$. Small ε needs many more half-steps; here each ε starts "
            "from the potentials of the one before (ε-scaling)."),
        words={"eps": "ε (large → small)",
               "eps_help": "Left: large ε, everyone with everyone. Right: small ε, exact "
                           "transport.",
               "status": "At ε = {eps}: distance to the exact plan ‖π − π*‖₁ = {to_exact}, "
                         "to a ⊗ b {to_product}.",
               "title": "Sinkhorn coupling at ε = {eps}"},
    ),
    Step(
        title="From points to a transformer",
        body=(
            "So far the cost was half the squared distance, ½‖x − y‖². Open it up: "
            "½‖x‖² + ½‖y‖² − ⟨x, y⟩. The first piece depends only on the point of A, the "
            "second only on the point of B, and a coupling pays both in full whatever it "
            "does, since every grain of A sends all of its mass and every grain of B receives "
            "all of its own. So, for a coupling, the cost might as well be **−⟨x, y⟩**.\n\n"
            "That is exactly a transformer's cost, **−⟨Q(μ, x), K(ν, y)⟩**. The query "
            "Q(μ, x) is what token x is looking for, computed in the context of its own "
            "text μ; the key K(ν, y) is what token y offers, in the context of ν. And "
            "attention is softmax of ⟨Q, K⟩, row by row: **one half-step of Sinkhorn**, "
            "stopped before the columns.\n\n"
            "Switch the cost: the coupling does not move, softmax does. Set the half-steps "
            "to 1: the two maps are the same. {status}"),
        math=(
            "With $Q(\\mu, x)$ and $K(\\nu, y)$ in $\\mathbb{R}^{d}$ the transformer's score "
            "is $S_{ij} = \\langle Q(\\mu, x_i), K(\\nu, y_j)\\rangle / \\sqrt{d}$ and\n\n"
            "$$\\operatorname{attention} = \\operatorname{softmax}_j(S_{ij}) = "
            "\\frac{\\pi^{(1)}_{ij}}{a_i},$$\n\n"
            "half-step 1 of Sinkhorn on the cost $C = -S$. Adding $u_i + v_j$ to the cost "
            "changes no coupling, but it does change softmax when $v_j$ varies."),
        words={"cost": "Cost", "cost_distance": "½‖x − y‖² (distance)",
               "cost_inner": "−⟨x, y⟩ (inner product)",
               "steps": "Sinkhorn half-steps",
               "left": "Softmax, row by row (attention)",
               "right": "Sinkhorn after {t} {hs}",
               "status": "Largest gap between the two maps: **{diff}**. The couplings for "
                         "the two costs differ by at most {cdiff}.",
               "title": "Cloud A (rows) against cloud B (columns), {preset}"},
    ),
    Step(
        title="Your texts",
        body=(
            "Now the grains are real tokens. The model (all-MiniLM-L6-v2, running on this "
            "machine) reads each text in its own context and gives every token of A a query "
            "and every token of B a key: here at its last layer, averaged over its twelve "
            "heads. The picture flattens those points onto the plane (PCA), so its distances "
            "are only roughly right; the plan itself is computed in full.\n\n"
            "The same pictures as before: lines for the plan, bars for what each token of B "
            "receives against its weight. Grey points are [CLS] and [SEP], which weigh "
            "nothing here. Switch between softmax and the coupling, and choose or type "
            "another pair in the sidebar. {status}"),
        math=(
            "$\\mu = \\sum_i a_i \\delta_{x_i}$ over A's tokens, "
            "$\\nu = \\sum_j b_j \\delta_{y_j}$ over B's, uniform over content tokens. "
            "$S_{ij} = \\langle Q(\\mu, x_i), K(\\nu, y_j)\\rangle / \\sqrt{d}$, mean over "
            "heads; softmax is $\\operatorname{diag}(a)\\operatorname{softmax}(S/\\varepsilon)$, "
            "the coupling is Sinkhorn on $-S$."),
        words={"plan": "Plan", "softmax": "Softmax (attention)", "coupling": "Sinkhorn coupling",
               "eps": "ε",
               "status": "To respect B's weights, softmax would have to move **{moved}** of "
                         "its mass; the coupling already does (its marginals are off by "
                         "{coupling_off}).",
               "link": "Open these texts in the main views ↗",
               "title_softmax": "Softmax (ε = {eps}) on your texts · layer {layer}, mean of heads",
               "title_coupling": "Sinkhorn coupling (ε = {eps}) on your texts · layer {layer}, "
                                 "mean of heads",
               "pca_note": "The flat picture keeps {explained} of the spread of the points. "
                           "How well nearness in it means a cheap pair: ρ = {rho} (1 would "
                           "be perfect)."},
    ),
    Step(
        title="The attention sink",
        body=(
            "Real transformers have a habit: many heads send most of their attention to a "
            "token that means almost nothing, such as [CLS] at the start or [SEP] at the "
            "end. It is called an **attention sink**, a place to park attention when a head "
            "has nothing better to do (Clark et al. found it in BERT in 2019).\n\n"
            "The bars show how much attention each token of your text A receives from the "
            "text itself: the model's own attention at layer {layer}, {heads}. The black "
            "ticks show what any coupling gives it, its weight, the same for every token "
            "here. {status}\n\n"
            "A coupling cannot do this: every token must receive exactly its weight, so "
            "there is nowhere to park mass. Whether sinks are a flaw of softmax or a feature "
            "the model relies on is still being studied."),
        math=(
            "Attention received by token $j$: $\\frac1n \\sum_i \\operatorname{softmax}_j"
            "(S_{ij})$, with $S = QK^{\\top}/\\sqrt{d}$ of text A with itself (the model's own "
            "attention, recomputed from its queries and keys). A coupling "
            "$\\pi \\in \\Pi(a, b)$ gives token $j$ exactly $b_j = 1/n$."),
        words={"layer": "Layer", "head": "Head", "mean_heads": "all heads (mean)",
               "heads_mean": "averaged over its {h} heads (dots: each head)",
               "heads_one": "head {head}",
               "status": "[CLS] and [SEP] together receive **{sink}** of the attention; a "
                         "coupling gives them {fair}.",
               "title": "Text A reading itself · layer {layer}, {heads_short}",
               "heads_short_mean": "mean of {h} heads", "heads_short_one": "head {head}"},
    ),
    Step(
        title="What the paper proves",
        body=(
            "Put the pieces together. A **contextual relation** is a rule F that takes any "
            "two texts, as clouds μ and ν, and returns a coupling F(μ, ν) between them, and "
            "does so continuously: texts that barely differ get couplings that barely "
            "differ. The map on the right is one value of such a rule: your pair in, one "
            "coupling out.\n\n"
            "Fraiman (arXiv 2603.25860) proves that **Sinkhorn Transformers** can "
            "approximate every such rule as closely as you like, under mild regularity "
            "assumptions. They are transformers that compute queries and keys in context, "
            "as usual, and end with a Sinkhorn layer on the cost −⟨Q, K⟩ instead of "
            "softmax. Softmax alone does not even produce couplings, as step 2 showed. "
            "Sander et al. (*Sinkformers*, 2022) had already trained transformers with "
            "Sinkhorn inside every attention layer.\n\n"
            "**What this app shows:** real queries and keys of a model trained with softmax, "
            "and the coupling Sinkhorn builds from them. **What it does not:** a trained "
            "Sinkhorn Transformer, or proof that these couplings relate meanings well. A "
            "universal approximation theorem says a good network exists; it does not say "
            "how large it must be or how to train it."),
        math=(
            "A coupling system is a continuous map "
            "$F : \\mathcal P(X) \\times \\mathcal P(Y) \\to \\mathcal P(X \\times Y)$ with "
            "$F(\\mu, \\nu) \\in \\Pi(\\mu, \\nu)$. The theorem, under the paper's regularity "
            "assumptions: for every such $F$ and "
            "$\\eta > 0$ there is a Sinkhorn Transformer $T$, built on "
            "$c(x, y) = -\\langle Q(\\mu, x), K(\\nu, y)\\rangle$, with "
            "$\\sup_{\\mu,\\nu} d\\big(T(\\mu,\\nu), F(\\mu,\\nu)\\big) < \\eta$. The proof "
            "combines the density of entropic plans among couplings, Stone–Weierstrass for "
            "costs as inner products of features, and in-context universality of "
            "transformers (Furuya et al., 2024)."),
        words={"title": "F(μ, ν) for your pair: the Sinkhorn coupling, layer {layer}",
               "refs": "R. Fraiman, *On the Expressive Power of Contextual Relations in "
                       "Transformers*, arXiv:2603.25860. M. E. Sander, P. Ablin, M. Blondel, "
                       "G. Peyré, *Sinkformers: Transformers with Doubly Stochastic "
                       "Attention*, AISTATS 2022. K. Clark, U. Khandelwal, O. Levy, "
                       "C. D. Manning, *What Does BERT Look At?*, BlackboxNLP 2019."},
    ),
)

# --------------------------------------------------------------------------- Spanish
UI_ES = {
    "page_title": "Aprende · sinkscope",
    "heading": "De las nubes de puntos al Sinkhorn Transformer",
    "subtitle": "Un recorrido guiado en ocho pasos: una idea y un dibujo vivo en cada uno. "
                "Avanza con las flechas ← → o con los botones.",
    "back": "← Atrás",
    "next": "Siguiente →",
    "step_of": "Paso {i} de {n}",
    "jump": "Ir al paso",
    "language": "Idioma",
    "presenter": "Modo presentación",
    "presenter_help": "Letra y figuras más grandes, para proyectar.",
    "in_symbols": "En símbolos",
    "half_step": "medio paso",
    "half_steps": "medios pasos",
    "shift": "Mover la nube B",
    "shift_help": "Desliza la nube B a izquierda o derecha; su forma y sus masas no cambian.",
    "main_link": "sinkscope: las vistas principales",
    "sidebar_texts": "Tus textos (pasos 6 a 8)",
    "example": "Ejemplo",
    "custom": "Tus propios textos",
    "text_a": "Texto A",
    "text_b": "Texto B",
    "text_help": "Pulsa Ctrl+Intro o haz clic fuera del cuadro para aplicar.",
    "model_note": "El modelo, all-MiniLM-L6-v2, aprendió sobre todo de textos en inglés.",
    "loading": "El modelo está leyendo tus textos (la primera vez tarda unos segundos)…",
    "bad_step": "No hay paso {raw} (el recorrido va del 1 al {n}); se muestra el paso {step}.",
    "bad_lang": "Idioma desconocido en el enlace: {raw}. Se muestra en inglés; "
                "idiomas: en, es.",
    "bad_preset": "Forma de nube desconocida en el enlace: {raw}. Se muestra «{preset}».",
    "bad_shift": "El desplazamiento de la nube B debe ser un número entre {lo} y {hi}; "
                 "llegó {raw} y se usa {shift}.",
    "bad_ex": "Ejemplo desconocido en el enlace: {raw}. Se muestra el par por defecto.",
    "text_cut": "El texto {name} del enlace tenía {n} caracteres; solo se conservan los "
                "primeros {kept}.",
    "bad_present": "present debe ser on u off, llegó {raw}; el modo presentación queda "
                   "apagado.",
    "error": "No se pudo dibujar este paso: {error}",
    "too_long": "El texto A tiene {n} tokens: este paso muestra todas las capas y cabezas "
                "del texto consigo mismo, así que admite como mucho {most}. Acorta el texto "
                "A en la barra lateral.",
    "done": "Fin del recorrido. Abre tus textos en las vistas principales para explorar "
            "cada capa y cada cabeza.",
}

WORDS_ES = {
    "cloud_a": "nube A", "cloud_b": "nube B", "mass": "masa", "zero": "no pesa",
    "receives_verb": "recibe", "sends_verb": "envía", "weighs": "pesa",
    "over": "demasiado", "under": "se queda corto", "on": "lo justo",
    "plan": "plan", "exact": "transporte exacto (ot.emd)", "weight_tick": "su peso",
    "received_title": "Lo que recibe cada punto de B", "sent_title": "Lo que envía cada punto de A",
    "attention": "atención recibida", "per_head": "una cabeza", "coupling": "acoplamiento",
    "token": "token",
}
WORDS_TEXT_ES = dict(WORDS_ES, received_title="Lo que recibe cada token de B",
                     sent_title="Lo que envía cada token de A")

PRESETS_ES = {"clusters": "Dos grupos", "outlier": "Un punto aislado",
              "shifted": "La misma nube, desplazada", "unequal": "Tamaños distintos"}

STEPS_ES = (
    Step(
        title="Un texto es una nube de polvo",
        body=(
            "Imagina una frase como una pizca de polvo lanzada al aire. Cada token es un "
            "grano que flota en algún punto del espacio, y cada grano lleva un poco de masa; "
            "entre todos pesan exactamente 1. Una frase corta es una nube pequeña; un libro, "
            "una nube enorme. Para las matemáticas, las dos son lo mismo.\n\n"
            "Aquí el espacio es una hoja plana, para que puedas verlo: la nube **A** en azul "
            "y la nube **B** en naranja, cada punto tan grande como su masa. En un "
            "transformer de verdad el espacio tiene cientos de dimensiones; lo demás no "
            "cambia.\n\n"
            "Prueba las distintas formas y mueve la nube B. La pregunta que nos acompañará "
            "todo el recorrido: **¿cómo deben emparejarse los granos de A con los de B?**"),
        math=(
            "Un texto es una medida de probabilidad, con un átomo por token:\n\n"
            "$$\\mu = \\sum_{i=1}^{n} a_i\\,\\delta_{x_i}, \\qquad a_i \\ge 0, "
            "\\quad \\sum_i a_i = 1.$$\n\n"
            "Aquí $x_i \\in \\mathbb{R}^2$; en el modelo, $x_i \\in \\mathbb{R}^{384}$."),
        words={"shape": "Forma de las nubes",
               "title": "{preset} · n = {n} puntos en A, m = {m} en B"},
    ),
    Step(
        title="Softmax: cada punto elige por cercanía",
        body=(
            "La atención responde grano a grano. Cada punto de A toma su masa y la reparte "
            "sobre B, dando más a los puntos que tiene cerca. Más cerca quiere decir más "
            "barato, y la parte que le toca a cada uno cae de forma exponencial cuando el "
            "coste sube. Eso es softmax.\n\n"
            "Cada punto de A envía exactamente lo que pesa. Pero a B nadie le pregunta. Las "
            "barras de la derecha muestran lo que recibe cada punto de B frente a lo que "
            "pesa (la raya negra). {summary}\n\n"
            "Mueve la nube B: los puntos de B que miran hacia A se lo llevan casi todo, y "
            "los del otro lado se quedan solos."),
        math=(
            "Con puntuaciones $S_{ij} = -\\tfrac12\\lVert x_i - y_j\\rVert^2$ (el coste es "
            "$-S$) y temperatura $\\varepsilon = 1$:\n\n"
            "$$\\pi^{(1)}_{ij} = a_i\\,\\frac{e^{S_{ij}/\\varepsilon}}"
            "{\\sum_k e^{S_{ik}/\\varepsilon}}.$$\n\n"
            "Las filas cuadran, $\\sum_j \\pi^{(1)}_{ij} = a_i$; las columnas no: en general "
            "$\\sum_i \\pi^{(1)}_{ij} \\ne b_j$."),
        words={"summary": "Ahora mismo **{over}** recibe {over_got} aunque pesa {over_w}, "
                          "y a **{under}** solo le llega {under_got}.",
               "summary_even": "Ahora mismo cada punto de B recibe, por casualidad, más o "
                               "menos su peso.",
               "title": "Softmax con ε = 1: A reparte su masa sobre B según la cercanía"},
    ),
    Step(
        title="La otra mitad: cuadrar también las columnas",
        body=(
            "Softmax cuadró las filas: cada punto de A envía lo que pesa. Cuadremos ahora "
            "las columnas: reescalamos lo que le llega a cada punto de B para que reciba "
            "justo su peso. Eso descuadra un poco las filas, así que las cuadramos otra vez, "
            "y luego las columnas otra vez… Cada arreglo es un **medio paso**, y este vaivén "
            "es el algoritmo de Sinkhorn.\n\n"
            "Pulsa **Siguiente medio paso** y fíjate en las barras. Los medios pasos impares "
            "ponen en su sitio las barras de A; los pares, las de B. Tras suficientes rondas "
            "(unas pocas en casi todas las formas, docenas con los dos grupos) cuadran los "
            "dos lados a la vez, y el plan se ha convertido en un "
            "**acoplamiento**: una forma de emparejar A con B en la que nadie se queda sin "
            "bailar y nadie baila más de lo que le toca.\n\n{status}"),
        math=(
            "El medio paso $t$ reescala las filas si $t$ es impar y las columnas si es par:"
            "\n\n"
            "$$\\pi \\leftarrow \\operatorname{diag}\\!\\Big(\\frac{a}{\\pi\\mathbf 1}\\Big)\\,"
            "\\pi, \\qquad \\pi \\leftarrow \\pi\\,\\operatorname{diag}\\!\\Big("
            "\\frac{b}{\\pi^{\\top}\\mathbf 1}\\Big).$$\n\n"
            "El medio paso 1 es softmax. El límite es el acoplamiento $\\pi \\in \\Pi(a, b)$: "
            "$\\pi\\mathbf 1 = a$ y $\\pi^{\\top}\\mathbf 1 = b$ (Sinkhorn, 1964)."),
        words={"next_half": "Siguiente medio paso", "counter": "Medios pasos hasta ahora",
               "counter_help": "Escribe 1 para volver a empezar, o cualquier número para "
                               "saltar hasta él.",
               "rows": "las filas", "columns": "las columnas",
               "status": "**Medio paso {t}** (acaba de cuadrar {side}): del lado de A está "
                         "fuera de sitio el {row_off} de la masa; del lado de B, el {col_off}.",
               "settled": "**Medio paso {t}**: a ninguno de los dos lados le queda fuera de "
                          "sitio ni el {tol} de la masa. El plan es un acoplamiento.",
               "title": "Tras {t} {hs} con ε = 1"},
    ),
    Step(
        title="ε: de todos con todos al transporte exacto",
        body=(
            "Softmax y Sinkhorn tienen una temperatura, **ε**, que dice cuánto importa el "
            "coste.\n\n"
            "Con ε grande, el coste apenas cuenta: todos bailan con todos, en proporción a "
            "sus masas. Es el producto a ⊗ b, el acoplamiento más repartido que existe. Con "
            "ε pequeño, el coste lo es todo, y el acoplamiento se convierte en el plan de "
            "**transporte óptimo exacto**: la manera más barata de llevar la nube A sobre la "
            "nube B sin que ningún grano de B se quede sin su parte.\n\n"
            "Las líneas unen parejas; cuanto más gruesa la línea, más masa comparten. Las "
            "líneas rosas discontinuas son el plan exacto, calculado aparte con el símplex "
            "de redes de POT (`ot.emd`). {status}"),
        math=(
            "$$\\pi_\\varepsilon = \\arg\\min_{\\pi \\in \\Pi(a,b)} \\langle C, \\pi\\rangle "
            "- \\varepsilon H(\\pi), \\qquad H(\\pi) = -\\sum_{ij} \\pi_{ij}\\log\\pi_{ij}.$$\n\n"
            "$\\pi_\\varepsilon \\to a \\otimes b$ cuando $\\varepsilon \\to \\infty$ y "
            "$\\pi_\\varepsilon \\to \\pi^\\star = "
            "\\arg\\min_{\\Pi(a,b)} \\langle C, \\pi\\rangle$ "
            "cuando $\\varepsilon \\to 0$. Con ε pequeño hacen falta muchos más medios pasos; "
            "aquí cada ε arranca de los potenciales del anterior (escalado de ε)."),
        words={"eps": "ε (de grande a pequeño)",
               "eps_help": "A la izquierda, ε grande: todos con todos. A la derecha, ε "
                           "pequeño: transporte exacto.",
               "status": "Con ε = {eps}: distancia al plan exacto ‖π − π*‖₁ = {to_exact}; "
                         "a a ⊗ b, {to_product}.",
               "title": "Acoplamiento de Sinkhorn con ε = {eps}"},
    ),
    Step(
        title="De los puntos al transformer",
        body=(
            "Hasta ahora el coste era la mitad de la distancia al cuadrado, ½‖x − y‖². "
            "Desarrollémosla: ½‖x‖² + ½‖y‖² − ⟨x, y⟩. El primer trozo solo depende del punto "
            "de A; el segundo, solo del punto de B; y un acoplamiento los paga enteros haga "
            "lo que haga, porque cada grano de A envía toda su masa y cada grano de B recibe "
            "toda la suya. Así que, para un acoplamiento, el coste bien puede ser "
            "**−⟨x, y⟩**.\n\n"
            "Ese es justo el coste de un transformer, **−⟨Q(μ, x), K(ν, y)⟩**. La consulta "
            "Q(μ, x) es lo que busca el token x, calculada en el contexto de su propio "
            "texto μ; la clave K(ν, y) es lo que ofrece el token y, en el contexto de ν. Y "
            "la atención es el softmax de ⟨Q, K⟩ fila a fila: **un medio paso de "
            "Sinkhorn**, que se detiene antes de las columnas.\n\n"
            "Cambia el coste: el acoplamiento no se mueve; softmax, sí. Pon los medios pasos "
            "en 1: los dos mapas son iguales. {status}"),
        math=(
            "Con $Q(\\mu, x)$ y $K(\\nu, y)$ en $\\mathbb{R}^{d}$, la puntuación del "
            "transformer es $S_{ij} = \\langle Q(\\mu, x_i), K(\\nu, y_j)\\rangle / \\sqrt{d}$ y"
            "\n\n"
            "$$\\operatorname{atención} = \\operatorname{softmax}_j(S_{ij}) = "
            "\\frac{\\pi^{(1)}_{ij}}{a_i},$$\n\n"
            "el medio paso 1 de Sinkhorn con coste $C = -S$. Sumar $u_i + v_j$ al coste no "
            "cambia ningún acoplamiento, pero sí cambia softmax cuando $v_j$ varía."),
        words={"cost": "Coste", "cost_distance": "½‖x − y‖² (distancia)",
               "cost_inner": "−⟨x, y⟩ (producto escalar)",
               "steps": "Medios pasos de Sinkhorn",
               "left": "Softmax, fila a fila (atención)",
               "right": "Sinkhorn tras {t} {hs}",
               "status": "Mayor diferencia entre los dos mapas: **{diff}**. Los "
                         "acoplamientos de los dos costes difieren como mucho en {cdiff}.",
               "title": "Nube A (filas) frente a nube B (columnas), {preset}"},
    ),
    Step(
        title="Tus textos",
        body=(
            "Ahora los granos son tokens de verdad. El modelo (all-MiniLM-L6-v2, que corre "
            "en esta misma máquina) lee cada texto en su propio contexto y da a cada token de "
            "A una consulta y a cada token de B una clave: aquí, en su última capa y "
            "promediando sus doce cabezas. El dibujo aplasta esos puntos sobre el plano "
            "(PCA), así que sus distancias solo son aproximadas; el plan, en cambio, se "
            "calcula completo.\n\n"
            "Los mismos dibujos de antes: líneas para el plan y barras para lo que recibe "
            "cada token de B frente a su peso. Los puntos grises son [CLS] y [SEP], que aquí "
            "no pesan nada. Cambia entre softmax y el acoplamiento, y elige o escribe otro "
            "par en la barra lateral. {status}"),
        math=(
            "$\\mu = \\sum_i a_i \\delta_{x_i}$ sobre los tokens de A, "
            "$\\nu = \\sum_j b_j \\delta_{y_j}$ sobre los de B, uniformes sobre los tokens "
            "de contenido. $S_{ij} = \\langle Q(\\mu, x_i), K(\\nu, y_j)\\rangle / \\sqrt{d}$, "
            "media de las cabezas; softmax es "
            "$\\operatorname{diag}(a)\\operatorname{softmax}(S/\\varepsilon)$ y el "
            "acoplamiento es Sinkhorn con coste $-S$."),
        words={"plan": "Plan", "softmax": "Softmax (atención)",
               "coupling": "Acoplamiento de Sinkhorn", "eps": "ε",
               "status": "Para respetar los pesos de B, softmax tendría que mover **el "
                         "{moved}** de su masa; el acoplamiento ya los respeta (sus marginales "
                         "se desvían en {coupling_off}).",
               "link": "Abrir estos textos en las vistas principales ↗",
               "title_softmax": "Softmax (ε = {eps}) sobre tus textos · capa {layer}, media "
                                "de las cabezas",
               "title_coupling": "Acoplamiento de Sinkhorn (ε = {eps}) sobre tus textos · "
                                 "capa {layer}, media de las cabezas",
               "pca_note": "El dibujo plano conserva el {explained} de la dispersión de los "
                           "puntos. Hasta qué punto estar cerca en él significa ser una pareja "
                           "barata: ρ = {rho} (1 sería perfecto)."},
    ),
    Step(
        title="El sumidero de atención",
        body=(
            "Los transformers de verdad tienen una costumbre: muchas cabezas mandan casi "
            "toda su atención a un token que apenas significa nada, como [CLS] al principio "
            "o [SEP] al final. Se le llama **sumidero de atención** (*attention sink*): un "
            "sitio donde aparcar la atención cuando una cabeza no tiene nada mejor que hacer "
            "(Clark y sus coautores lo encontraron en BERT en 2019).\n\n"
            "Las barras muestran cuánta atención recibe cada token de tu texto A del propio "
            "texto: la atención del modelo en la capa {layer}, {heads}. Las rayas negras "
            "marcan lo que le da cualquier acoplamiento, su peso, que aquí es igual para "
            "todos los tokens. {status}\n\n"
            "Un acoplamiento no puede hacer esto: cada token tiene que recibir exactamente "
            "su peso, así que no hay dónde aparcar masa. Si los sumideros son un defecto de "
            "softmax o algo de lo que el modelo se sirve es una pregunta que sigue "
            "abierta."),
        math=(
            "Atención que recibe el token $j$: $\\frac1n \\sum_i \\operatorname{softmax}_j"
            "(S_{ij})$, con $S = QK^{\\top}/\\sqrt{d}$ del texto A consigo mismo (la atención "
            "del propio modelo, recalculada a partir de sus consultas y claves). Un "
            "acoplamiento $\\pi \\in \\Pi(a, b)$ le da al token $j$ exactamente "
            "$b_j = 1/n$."),
        words={"layer": "Capa", "head": "Cabeza", "mean_heads": "todas (media)",
               "heads_mean": "promediada sobre sus {h} cabezas (puntos: cada cabeza)",
               "heads_one": "cabeza {head}",
               "status": "[CLS] y [SEP] reciben juntos **el {sink}** de la atención; un "
                         "acoplamiento les da el {fair}.",
               "title": "El texto A leyéndose a sí mismo · capa {layer}, {heads_short}",
               "heads_short_mean": "media de {h} cabezas", "heads_short_one": "cabeza {head}"},
    ),
    Step(
        title="Lo que demuestra el artículo",
        body=(
            "Juntemos las piezas. Una **relación contextual** es una regla F que toma dos "
            "textos cualesquiera, como nubes μ y ν, y devuelve un acoplamiento F(μ, ν) entre "
            "ellos, y lo hace de forma continua: a textos casi iguales les tocan "
            "acoplamientos casi iguales. El mapa de la derecha es un valor de una regla así: "
            "entra tu par y sale un acoplamiento.\n\n"
            "Fraiman (arXiv 2603.25860) demuestra que los **Sinkhorn Transformers** pueden "
            "aproximar cualquier regla de ese tipo tanto como se quiera, bajo hipótesis de "
            "regularidad moderadas. Son transformers que calculan consultas y claves en "
            "contexto, como siempre, y terminan con una capa de Sinkhorn sobre el coste "
            "−⟨Q, K⟩ en lugar de softmax. Softmax por sí solo ni siquiera produce "
            "acoplamientos, como vimos en el paso 2. Sander y sus coautores (*Sinkformers*, "
            "2022) ya habían entrenado transformers con Sinkhorn dentro de cada capa de "
            "atención.\n\n"
            "**Lo que muestra esta aplicación:** las consultas y claves reales de un modelo "
            "entrenado con softmax, y el acoplamiento que Sinkhorn construye con ellas. "
            "**Lo que no muestra:** un Sinkhorn Transformer entrenado, ni la prueba de que "
            "estos acoplamientos relacionen bien los significados. Un teorema de "
            "aproximación universal dice que existe una red que lo hace bien; no dice cuán "
            "grande tiene que ser ni cómo entrenarla."),
        math=(
            "Un sistema de acoplamientos es una aplicación continua "
            "$F : \\mathcal P(X) \\times \\mathcal P(Y) \\to \\mathcal P(X \\times Y)$ con "
            "$F(\\mu, \\nu) \\in \\Pi(\\mu, \\nu)$. El teorema, bajo las hipótesis de "
            "regularidad del artículo: para toda $F$ así y todo "
            "$\\eta > 0$ existe un Sinkhorn Transformer $T$, construido sobre "
            "$c(x, y) = -\\langle Q(\\mu, x), K(\\nu, y)\\rangle$, con "
            "$\\sup_{\\mu,\\nu} d\\big(T(\\mu,\\nu), F(\\mu,\\nu)\\big) < \\eta$. La prueba "
            "combina la densidad de los planes entrópicos entre los acoplamientos, "
            "Stone–Weierstrass para escribir costes como productos escalares de "
            "características, y la universalidad en contexto de los transformers (Furuya y "
            "coautores, 2024)."),
        words={"title": "F(μ, ν) para tu par: el acoplamiento de Sinkhorn, capa {layer}",
               "refs": "R. Fraiman, *On the Expressive Power of Contextual Relations in "
                       "Transformers*, arXiv:2603.25860. M. E. Sander, P. Ablin, M. Blondel, "
                       "G. Peyré, *Sinkformers: Transformers with Doubly Stochastic "
                       "Attention*, AISTATS 2022. K. Clark, U. Khandelwal, O. Levy, "
                       "C. D. Manning, *What Does BERT Look At?*, BlackboxNLP 2019."},
    ),
)

# Titles of the examples in ``assets/examples.json``, for the Spanish page.
EXAMPLES_ES = {
    "bank": "Polisemia: «bank», la orilla de un río o un banco",
    "paraphrase": "Paráfrasis",
    "qa": "Una pregunta y su respuesta",
    "negation": "Negación",
    "lengths": "Longitudes muy distintas",
    "reordered": "Las mismas palabras, en otro orden",
    "en-es": "Un par inglés–español",
    "self": "Un texto consigo mismo",
}

UI = {"en": UI_EN, "es": UI_ES}
STEPS = {"en": STEPS_EN, "es": STEPS_ES}
WORDS = {"en": WORDS_EN, "es": WORDS_ES}
WORDS_TEXT = {"en": WORDS_TEXT_EN, "es": WORDS_TEXT_ES}
PRESETS = {"en": PRESETS_EN, "es": PRESETS_ES}
N_STEPS = len(STEPS_EN)
