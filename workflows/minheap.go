package workflows

// minHeap is a min-heap of items by a key: the queue of runnable steps
// of one conflict profile, in the one-pass scheduler (step indices by rank)
// and in the control-flow runner (step runs by key).
type minHeap[T any] struct {
	key   func(T) priority
	items []T
}

// priority is a heap key: the smaller first, hi before lo.
type priority struct{ hi, lo int }

func (p priority) before(o priority) bool { return p.hi < o.hi || (p.hi == o.hi && p.lo < o.lo) }

func (h *minHeap[T]) len() int           { return len(h.items) }
func (h *minHeap[T]) front() T           { return h.items[0] }
func (h *minHeap[T]) less(a, b int) bool { return h.key(h.items[a]).before(h.key(h.items[b])) }

func (h *minHeap[T]) push(item T) {
	h.items = append(h.items, item)
	for k := len(h.items) - 1; k > 0; {
		parent := (k - 1) / 2
		if !h.less(k, parent) {
			break
		}
		h.items[k], h.items[parent] = h.items[parent], h.items[k]
		k = parent
	}
}

func (h *minHeap[T]) pop() T {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	var zero T
	h.items[last] = zero // no reference kept past the end
	h.items = h.items[:last]
	for k := 0; ; {
		l, r, m := 2*k+1, 2*k+2, k
		if l < last && h.less(l, m) {
			m = l
		}
		if r < last && h.less(r, m) {
			m = r
		}
		if m == k {
			break
		}
		h.items[k], h.items[m] = h.items[m], h.items[k]
		k = m
	}
	return top
}

// dropWhile pops the front while drop says so and reports whether it
// popped any.
func (h *minHeap[T]) dropWhile(drop func(T) bool) bool {
	dropped := false
	for len(h.items) > 0 && drop(h.items[0]) {
		h.pop()
		dropped = true
	}
	return dropped
}
