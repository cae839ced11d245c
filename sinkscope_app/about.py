"""The About view: the measure-theoretic picture in plain words and a few formulas."""

ABOUT = r"""
### Texts are clouds, relations are couplings

**A text is a cloud of dust.** Each token is a grain sitting at a point $x_i$ of the
model's embedding space, carrying a little mass $a_i$. Together they form a probability
measure

$$
\mu = \sum_{i=1}^{n} a_i \delta_{x_i}, \qquad a_i \ge 0, \qquad \sum_i a_i = 1.
$$

A sentence is a small cloud, a book a big one; the mathematics does not care about the
length. By default every content token weighs the same and the special tokens
(`[CLS]`, `[SEP]`) weigh nothing; the sidebar lets you weigh all tokens equally or by
the size of their embedding.

**Relating two texts means pairing up their grains.** Think of a dance: text A's tokens
on one side of the hall, text B's on the other. A *coupling* says how much of each
dancer of A dances with each dancer of B. It is a joint measure $\pi$ on pairs whose two
marginals are the texts themselves:

$$
\pi \in \Pi(\mu, \nu) \iff \sum_j \pi_{ij} = a_i \quad \text{and} \quad \sum_i \pi_{ij} = b_j.
$$

The first rule says every dancer of A dances exactly as much as it weighs; the second
says the same for B: **nobody sits out and nobody is booked twice over**.

### Who likes whom: the cost

For one layer and head the model gives each token of A a query $Q(\mu, x_i)$ computed in
A's own context, and each token of B a key $K(\nu, y_j)$ in B's context. Their scaled
inner product is the score the model itself uses, and its negative is the cost of
pairing token $i$ with token $j$:

$$
S_{ij} = \frac{\langle Q(\mu, x_i), K(\nu, y_j)\rangle}{\sqrt{d_{\mathrm{head}}}},
\qquad C_{ij} = -S_{ij}.
$$

### The Sinkhorn coupling

Among all couplings, take the cheapest one, blurred by an entropy bonus of strength
$\varepsilon$:

$$
\pi^\varepsilon = \arg\min_{\pi \in \Pi(\mu,\nu)} \langle C, \pi\rangle - \varepsilon H(\pi),
\qquad H(\pi) = -\sum_{ij} \pi_{ij}\log \pi_{ij}.
$$

Its solution has the form $\pi_{ij} = \exp\big((f_i + g_j + S_{ij})/\varepsilon\big)$, and
Sinkhorn's algorithm finds the potentials $f, g$ by taking turns: a **row half-step**
rescales every row so that row $i$ sums to $a_i$; a **column half-step** rescales every
column so that column $j$ sums to $b_j$. Repeat until both rules hold.

- **Large ε** (the slider to the right): the entropy wins and everyone dances with
  everyone, $\pi \to a \otimes b$ (the product measure).
- **Small ε** (to the left): the cost wins and the plan tends to the *exact* optimal
  transport plan — few, sharp pairings. Small ε needs many more half-steps.

### Softmax is half a Sinkhorn step

Start Sinkhorn with $g = 0$ and run a single row half-step. Row $i$ becomes

$$
\pi^{(1)}_{ij} = a_i \frac{e^{S_{ij}/\varepsilon}}{\sum_k e^{S_{ik}/\varepsilon}}
= a_i \operatorname{softmax}_j(S_{i\cdot}/\varepsilon),
$$

which is exactly attention, written as a joint measure $\operatorname{diag}(a) \operatorname{softmax}(S/\varepsilon)$. Softmax stops there: **every dancer of A has the
right amount of dancing, but the dancers of B do not** — a few popular tokens are
swamped, others are left alone. The *Compare* view shows this directly in the bars above
each map, and the metrics strip measures it as the softmax column error
$\lVert (\operatorname{diag}(a) \operatorname{softmax})^\top \mathbf{1} - b \rVert_1$. Set the
half-step slider to **1** and the Sinkhorn plan *is* softmax; move it to 2, 3, 10 … and
watch the columns fall into line.

### What the paper proves

Fraiman (*On the Expressive Power of Contextual Relations in Transformers*, 2026) reads
a relation between two texts as a map that takes the pair of measures $(\mu, \nu)$ and
returns a coupling $F(\mu,\nu) \in \Pi(\mu,\nu)$, continuously. Its main theorem is a
**universal approximation** result: transformers whose final interaction is a Sinkhorn
layer on the cost $-\langle Q(\mu,x), K(\nu,y)\rangle$ can approximate *any* such
continuous coupling map, uniformly, under mild regularity assumptions. Three ideas carry
the proof: entropic plans are dense among couplings; costs can be approximated by inner
products of features (Stone–Weierstrass); and transformers are universal in-context
approximators of the features $Q$ and $K$ (Furuya et al., 2024). In the dance picture:
with enough capacity, a Sinkhorn transformer can learn any reasonable rule for who should
dance with whom — and every dance it proposes is a fair one.

### What this app shows — and what it does not

sinkscope takes a real, pretrained transformer (all-MiniLM-L6-v2 by default), reads its
own queries, keys and scores, and puts softmax attention beside the Sinkhorn coupling on
**the same scores**. The model was trained with softmax, not Sinkhorn: the couplings here
are a lens on the model's geometry, not the output of the paper's trained architecture.

| view | what to look for |
|---|---|
| **Compare** | softmax and Sinkhorn on one colour scale; bars show what each token of B receives against its weight $b_j$ (vermillion: too much, blue: left alone). The difference map shows where the coupling moves mass. |
| **Graph** | who sends mass to whom; edge width ∝ mass. Softmax crowds a few tokens; the coupling reaches everyone. |
| **Cloud** | both texts as one point cloud (PCA or UMAP of Q ∪ K or hidden states) with the heaviest coupling edges. Trust it only when the distance–cost correlation ρ is high. |
| **Convergence** | the row and column errors after each half-step, with cost and entropy. |
| **All heads** | every layer and head at once; click a tile to open that head. |
| **ε path** | the coupling as ε falls from the product measure to exact transport. |

**References.** R. Fraiman, *On the Expressive Power of Contextual Relations in
Transformers*, arXiv:2603.25860. M. E. Sander, P. Ablin, M. Blondel, G. Peyré,
*Sinkformers: Transformers with Doubly Stochastic Attention*, AISTATS 2022. M. Cuturi,
*Sinkhorn Distances: Lightspeed Computation of Optimal Transport*, NeurIPS 2013.
G. Peyré, M. Cuturi, *Computational Optimal Transport*, 2019.
"""
