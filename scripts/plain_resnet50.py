"""A plain training loop with no harness, to check `rocmdoctor bench` for overhead:
ResNet-50 (torchvision), synthetic data, SGD momentum 0.9, bf16 autocast, channels_last,
torch.compile; CUDA events around 50 steps after 30 warm-up steps. Prints images/s."""

import sys

import torch
import torchvision

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 128
model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
y = torch.randint(0, 1000, (batch,), device="cuda")
cmodel = torch.compile(model)
loss_fn = torch.nn.CrossEntropyLoss()


def step() -> None:
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = loss_fn(cmodel(x), y)
    loss.backward()
    opt.step()


for _ in range(30):
    step()
torch.cuda.synchronize()
for _ in range(3):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(50):
        step()
    end.record()
    end.synchronize()
    rate = 50 * batch / (start.elapsed_time(end) / 1000)
    print(f"plain loop, batch {batch}: {rate:.1f} images/s")
